#include "cli/web_config.h"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <map>
#include <string>

#include "testing/test_util.h"

namespace profwatch::cli {
namespace {

using testing::TempDir;
using testing::WriteFile;

// bcrypt (cost 4) of "secret": a fixed test value.
constexpr const char* kSecretHash = "$2b$04$lXRYIwpwjzC7RiibA7VaguIx27a4iLMeWQGCW26yh9qzP54ahTiP6";

std::string Load(const TempDir& tmp, const std::string& text) {
  const std::string path = tmp.Sub("web.yml");
  WriteFile(path, text);
  auto config = LoadWebConfig(path);
  return config ? "" : config.error().context;
}

TEST(WebConfigTest, EmptyFileIsPlainHttpWithoutAuth) {
  TempDir tmp;
  const std::string path = tmp.Sub("web.yml");
  WriteFile(path, "");
  auto config = LoadWebConfig(path);
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
  const std::string path = tmp.Sub("web.yml");
  WriteFile(path, std::string("http_server_config:\n  http2: false\n  headers:\n"
                              "    X-Content-Type-Options: nosniff\n    X-XSS-Protection: ''\n"
                              "basic_auth_users:\n  alice: '") +
                      kSecretHash + "'\n");
  auto config = LoadWebConfig(path);
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

}  // namespace
}  // namespace profwatch::cli
