// The reload logic of the front door (web/door.h) on an injected clock and
// file system: what is re-read, when, and what a bad version leaves.
#include "web/door.h"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace profwatch::web {
namespace {

constexpr const char* kPath = "/etc/web.yml";

// Files by name: their identity, and what loading the config yields (an
// error text, or users and TLS on/off). Every load is counted.
struct FakeFiles {
  std::map<std::string, std::string> identity;
  std::string error;  // non-empty: the load fails with it
  bool tls = false;
  std::string cert = "/etc/tls.crt";
  std::string user = "alice";
  int loads = 0;
  std::function<void()> during_load;

  WebDoor::Files Files() {
    return WebDoor::Files{[this](const std::string& f) {
                            auto it = identity.find(f);
                            return it == identity.end() ? std::string("missing") : it->second;
                          },
                          [this](const std::string& path) -> Result<std::shared_ptr<DoorState>> {
                            ++loads;
                            if (during_load) during_load();
                            if (!error.empty()) return MakeError(ErrorCode::kConfig, error);
                            auto state = std::make_shared<DoorState>();
                            state->config.path = path;
                            state->config.users[user] =
                                "$2b$04$lXRYIwpwjzC7RiibA7VaguIx27a4iLMeWQGCW26yh9qzP54ahTiP6";
                            if (tls) {
                              state->config.tls = TlsServerConfig{};
                              state->config.tls->cert_file = cert;
                              state->config.tls->key_file = "/etc/tls.key";
                              state->ssl_ctx.reset(SSL_CTX_new(TLS_server_method()));
                            }
                            state->auth = std::make_unique<BasicAuth>(state->config.users);
                            return state;
                          }};
  }
};

struct Counted {
  int failed = 0;
  std::vector<bool> results;
  WebDoor::Hooks Hooks() {
    WebDoor::Hooks h;
    h.reload_failed = [this] { ++failed; };
    h.reload_result = [this](bool ok) { results.push_back(ok); };
    return h;
  }
};

// Every test's door: kPath at version v1 on a fake clock and file system,
// its reload outcomes counted.
class WebDoorTest : public ::testing::Test {
 protected:
  void SetUp() override { files.identity[kPath] = "v1"; }
  Result<std::unique_ptr<WebDoor>> Open(const std::string& path = kPath) {
    return WebDoor::Open(path, hooks.Hooks(), files.Files(), &clock);
  }

  FakeClock clock;
  FakeFiles files;
  Counted hooks;
};

std::string User(const std::shared_ptr<DoorState>& state) {
  return state->config.users.begin()->first;
}

TEST_F(WebDoorTest, UnchangedFilesAreNotReRead) {
  auto door = Open();
  ASSERT_TRUE(door) << door.error().context;
  EXPECT_EQ(files.loads, 1);
  for (int i = 0; i < 5; ++i) {
    clock.Advance(WebDoor::kCheckInterval * 2);
    EXPECT_EQ(User((*door)->Current()), "alice");
  }
  EXPECT_EQ(files.loads, 1);
}

TEST_F(WebDoorTest, AChangeIsReadAtTheFirstCheckAfterTheInterval) {
  auto door = Open();
  ASSERT_TRUE(door);
  files.identity[kPath] = "v2";
  files.user = "bob";
  clock.Advance(WebDoor::kCheckInterval / 2);
  EXPECT_EQ(User((*door)->Current()), "alice");  // not checked yet
  EXPECT_EQ(files.loads, 1);
  clock.Advance(WebDoor::kCheckInterval / 2);
  EXPECT_EQ(User((*door)->Current()), "bob");
  EXPECT_EQ(files.loads, 2);
  EXPECT_EQ(hooks.results, std::vector<bool>{true});
  EXPECT_EQ(hooks.failed, 0);
}

TEST_F(WebDoorTest, ABadVersionKeepsTheOldOneAndIsCountedOnce) {
  auto door = Open();
  ASSERT_TRUE(door);
  files.identity[kPath] = "bad";
  files.error = "web config file /etc/web.yml: line 1: junk";
  for (int i = 0; i < 4; ++i) {
    clock.Advance(WebDoor::kCheckInterval);
    EXPECT_EQ(User((*door)->Current()), "alice");
  }
  EXPECT_EQ(files.loads, 2);  // the bad version is read once, not at every check
  EXPECT_EQ(hooks.failed, 1);
  EXPECT_EQ(hooks.results, std::vector<bool>{false});
  // Fixed: read again and taken.
  files.identity[kPath] = "v3";
  files.error.clear();
  files.user = "carol";
  clock.Advance(WebDoor::kCheckInterval);
  EXPECT_EQ(User((*door)->Current()), "carol");
  EXPECT_EQ(hooks.failed, 1);
  EXPECT_EQ(hooks.results, (std::vector<bool>{false, true}));
}

TEST_F(WebDoorTest, AChangedCertificateIsAChangeAndTlsCannotBeSwitchedOff) {
  files.identity["/etc/tls.crt"] = "c1";
  files.tls = true;
  auto door = Open();
  ASSERT_TRUE(door);
  EXPECT_TRUE((*door)->tls());
  files.identity["/etc/tls.crt"] = "c2";  // rotated in place: the config file is the same
  clock.Advance(WebDoor::kCheckInterval);
  (*door)->Current();
  EXPECT_EQ(files.loads, 2);
  EXPECT_EQ(hooks.results, std::vector<bool>{true});
  files.identity[kPath] = "v2";
  files.tls = false;
  files.user = "bob";
  clock.Advance(WebDoor::kCheckInterval);
  std::shared_ptr<DoorState> state = (*door)->Current();
  EXPECT_EQ(User(state), "alice");
  EXPECT_NE(state->ssl_ctx, nullptr);
  EXPECT_EQ(hooks.failed, 1);
}

TEST_F(WebDoorTest, AChangeDuringTheReadIsSeenAtTheNextCheck) {
  auto door = Open();
  ASSERT_TRUE(door);
  files.identity[kPath] = "v2";
  files.user = "bob";
  // The file is replaced again while version 2 is read.
  files.during_load = [this] {
    files.identity[kPath] = "v3";
    files.during_load = nullptr;
  };
  clock.Advance(WebDoor::kCheckInterval);
  EXPECT_EQ(User((*door)->Current()), "bob");
  files.user = "carol";
  clock.Advance(WebDoor::kCheckInterval);
  EXPECT_EQ(User((*door)->Current()), "carol");
  EXPECT_EQ(files.loads, 3);
}

TEST_F(WebDoorTest, NoPathIsNoDoorAndNothingIsRead) {
  auto door = Open("");
  ASSERT_TRUE(door);
  clock.Advance(WebDoor::kCheckInterval * 3);
  EXPECT_FALSE((*door)->Current()->auth->enabled());
  EXPECT_FALSE((*door)->tls());
  EXPECT_EQ(files.loads, 0);
}

TEST_F(WebDoorTest, AFailedFirstLoadIsAnError) {
  files.error = "web config file /etc/web.yml: cannot be read";
  auto door = Open();
  ASSERT_FALSE(door);
  EXPECT_EQ(door.error().context, files.error);
}

}  // namespace
}  // namespace profwatch::web
