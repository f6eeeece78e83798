#include "web/web_config.h"

#include <crypt.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include <map>
#include <memory>
#include <string>

#include "testing/test_util.h"
#include "web/basic_auth.h"
#include "web/door.h"

namespace profwatch::web {
namespace {

using testing::TempDir;
using testing::WriteFile;

// bcrypt (cost 4) of "secret": a fixed test value.
constexpr const char* kSecretHash = "$2b$04$lXRYIwpwjzC7RiibA7VaguIx27a4iLMeWQGCW26yh9qzP54ahTiP6";

// `text` written to web.yml in `tmp`, then loaded.
Result<WebConfig> LoadText(const TempDir& tmp, const std::string& text) {
  const std::string path = tmp.Sub("web.yml");
  WriteFile(path, text);
  return LoadWebConfig(path);
}

// The load's error, "" when it loads.
std::string Load(const TempDir& tmp, const std::string& text) {
  auto config = LoadText(tmp, text);
  return config ? "" : config.error().context;
}

TEST(WebConfigTest, EmptyFileIsPlainHttpWithoutAuth) {
  TempDir tmp;
  auto config = LoadText(tmp, "");
  ASSERT_TRUE(config) << config.error().context;
  EXPECT_FALSE(config->tls);
  EXPECT_TRUE(config->users.empty());
  EXPECT_TRUE(config->headers.empty());
}

TEST(WebConfigTest, ErrorsNameTheFileTheKeyAndTheLine) {
  TempDir tmp;
  const std::string prefix = "web config file " + tmp.Sub("web.yml") + ": ";
  EXPECT_EQ(Load(tmp, "basic_auth_users: {}\n\nbasic_auth_user: {}\n"),
            prefix + "line 3: unknown key 'basic_auth_user'");
  EXPECT_EQ(Load(tmp, "http_server_config:\n  headers:\n    X-Frame-Options: always\n"),
            prefix + "line 3: X-Frame-Options: must be deny or sameorigin");
  EXPECT_EQ(Load(tmp, "basic_auth_users:\n  alice: $2y$10$short\n"),
            prefix +
                "line 2: basic_auth_users.alice: not a bcrypt hash ($2y$10$ and 53 characters, "
                "e.g. from htpasswd -nBC 10)");
  EXPECT_EQ(Load(tmp, "tls_server_config:\n  key_file: k\n"),
            prefix + "line 2: tls_server_config: missing cert_file");
  EXPECT_EQ(Load(tmp, "tls_server_config:\n  cert: inline\n"),
            prefix + "line 2: tls_server_config.cert: not supported by profwatch (use cert_file)");
  EXPECT_EQ(Load(tmp, "tls_server_config:\n  min_version: TLS13\n"),
            prefix +
                "line 2: tls_server_config: min_version is set but cert_file and key_file "
                "are not");
  EXPECT_EQ(Load(tmp, "tls_server_config:\n  cert_file: ''\n  key_file: ''\n"), "");
  EXPECT_EQ(Load(tmp, "[1, 2]\n"),
            prefix +
                "line 1: expected a map (tls_server_config, http_server_config, "
                "basic_auth_users)");
}

TEST(WebConfigTest, HeadersAndUsersAreKept) {
  TempDir tmp;
  auto config = LoadText(tmp, std::string("http_server_config:\n  http2: false\n  headers:\n"
                                          "    X-Content-Type-Options: nosniff\n"
                                          "    X-XSS-Protection: ''\n"
                                          "basic_auth_users:\n  alice: '") +
                                  kSecretHash + "'\n");
  ASSERT_TRUE(config) << config.error().context;
  ASSERT_EQ(config->headers.size(), 1u);  // blank values are unset
  EXPECT_EQ(config->headers[0].first, "X-Content-Type-Options");
  EXPECT_EQ(config->headers[0].second, "nosniff");
  EXPECT_EQ(config->users.at("alice"), kSecretHash);
}

TEST(BasicAuthTest, RightWrongUnknownAndMalformed) {
  BasicAuth auth(std::map<std::string, std::string>{{"alice", kSecretHash}});
  ASSERT_TRUE(auth.enabled());
  // "alice:secret", "alice:wrong", "bob:secret", "alice:sec:ret"
  EXPECT_TRUE(auth.Check("Basic YWxpY2U6c2VjcmV0"));
  EXPECT_FALSE(auth.Check("Basic YWxpY2U6d3Jvbmc="));
  EXPECT_FALSE(auth.Check("Basic Ym9iOnNlY3JldA=="));
  EXPECT_FALSE(auth.Check("Basic YWxpY2U6c2VjOnJldA=="));
  EXPECT_FALSE(auth.Check(nullptr));
  EXPECT_FALSE(auth.Check("Bearer YWxpY2U6c2VjcmV0"));
  EXPECT_FALSE(auth.Check("Basic !!!"));
  EXPECT_FALSE(auth.Check("Basic YWxpY2U="));  // no colon
  // Cached: the right password again, and still not a wrong one.
  EXPECT_TRUE(auth.Check("Basic YWxpY2U6c2VjcmV0"));
  EXPECT_FALSE(auth.Check("Basic YWxpY2U6d3Jvbmc="));
  EXPECT_FALSE(BasicAuth(std::map<std::string, std::string>{}).enabled());
}

TEST(BasicAuthTest, NulOrAnyByteAfterThePasswordIsRefused) {
  BasicAuth auth(std::map<std::string, std::string>{{"alice", kSecretHash}});
  EXPECT_TRUE(auth.Check("Basic YWxpY2U6c2VjcmV0"));           // alice:secret
  EXPECT_FALSE(auth.Check("Basic YWxpY2U6c2VjcmV0AGp1bms="));  // alice:secret\0junk
  EXPECT_FALSE(auth.Check("Basic YWxpY2U6c2VjcmV0AA=="));      // alice:secret\0
  EXPECT_FALSE(auth.Check("Basic YWxpY2U6c2VjcmV0eA=="));      // alice:secretx
}

std::string Base64(const std::string& text) {
  std::string out(4 * ((text.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// Go's bcrypt, like libcrypt's, reads the first 72 bytes of a password (the
// key schedule takes 18 words of it): a longer one matches with any tail.
TEST(BasicAuthTest, PasswordsLongerThan72BytesCountTheirFirst72AsInGo) {
  const std::string password(72, 'p');
  auto data = std::make_unique<crypt_data>();
  const char* setting = crypt_gensalt_rn("$2b$", 4, nullptr, 0, data->setting,
                                         static_cast<int>(sizeof data->setting));
  ASSERT_NE(setting, nullptr);
  const char* hash = crypt_rn(password.c_str(), setting, data.get(), sizeof(crypt_data));
  ASSERT_NE(hash, nullptr);
  BasicAuth auth(std::map<std::string, std::string>{{"alice", hash}});
  EXPECT_TRUE(auth.Check(("Basic " + Base64("alice:" + password)).c_str()));
  EXPECT_TRUE(auth.Check(("Basic " + Base64("alice:" + password + "tail")).c_str()));
  EXPECT_FALSE(auth.Check(("Basic " + Base64("alice:" + password.substr(1))).c_str()));
}

// An unknown name is checked against a hash of the highest configured cost,
// so it answers as slowly as a wrong password of the costliest user.
TEST(BasicAuthTest, UnknownUsersAreCheckedAtTheHighestConfiguredCost) {
  const std::map<std::string, std::string> users{
      {"alice", "$2y$05$lXRYIwpwjzC7RiibA7VaguIx27a4iLMeWQGCW26yh9qzP54ahTiP6"},
      {"bob", "$2a$12$MTyrTuhRNQPyXt3UNjCsIe4kBCREXwQSdRZPsZ6Zu5Ns9DxzbHMM."},
      {"carol", kSecretHash}};
  const std::string dummy = BasicAuth::UnknownUserHash(users);
  EXPECT_EQ(dummy.substr(0, 7), "$2b$12$");
  EXPECT_EQ(dummy.size(), 60u);
  EXPECT_EQ(BasicAuth(users).unknown_user_hash(), dummy);
  EXPECT_EQ(BasicAuth::UnknownUserHash({{"carol", kSecretHash}}).substr(0, 7), "$2b$04$");
  // A hash libcrypt computes at that cost (not refused as malformed).
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_rn("x", BasicAuth::UnknownUserHash({{"carol", kSecretHash}}).c_str(),
                             data.get(), sizeof(crypt_data));
  ASSERT_NE(out, nullptr);
  EXPECT_NE(out[0], '*');
  EXPECT_EQ(std::string(out).substr(0, 29),
            BasicAuth::UnknownUserHash({{"carol", kSecretHash}}).substr(0, 29));
}

}  // namespace
}  // namespace profwatch::web
