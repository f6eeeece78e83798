// Every tests/fixtures/web/*.good.yml loads; every *.bad.yml fails with the
// error its first line states ("# error: TEXT", after the file's name).
#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "web/web_config.h"

namespace profwatch::web {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Fixtures(const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(PROFWATCH_SOURCE_DIR "/tests/fixtures/web")) {
    const std::string name = entry.path().string();
    if (name.size() > suffix.size() && name.ends_with(suffix)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(WebConfigGoldenTest, GoodFilesLoad) {
  const std::vector<std::string> good = Fixtures(".good.yml");
  ASSERT_GE(good.size(), 4u);
  for (const std::string& path : good) {
    auto config = LoadWebConfig(path);
    EXPECT_TRUE(config) << path << ": " << config.error().context;
  }
}

TEST(WebConfigGoldenTest, EveryTlsKeyIsRead) {
  auto config = LoadWebConfig(PROFWATCH_SOURCE_DIR "/tests/fixtures/web/tls_full.good.yml");
  ASSERT_TRUE(config) << config.error().context;
  ASSERT_TRUE(config->tls);
  const TlsServerConfig& tls = *config->tls;
  EXPECT_EQ(tls.cert_file, "server.crt");
  EXPECT_EQ(tls.key_file, "server.key");
  EXPECT_EQ(tls.client_ca_file, "ca.crt");
  EXPECT_EQ(tls.client_auth, ClientAuth::kRequireAndVerifyClientCert);
  EXPECT_EQ(tls.min_version, TLS1_2_VERSION);
  EXPECT_EQ(tls.max_version, TLS1_3_VERSION);
  EXPECT_EQ(tls.cipher_list, "ECDHE-RSA-AES128-GCM-SHA256");  // the TLS 1.3 suite is left out
  EXPECT_EQ(tls.groups, "P-256:X25519");
  EXPECT_FALSE(tls.prefer_server_cipher_suites);
  auto plain = LoadWebConfig(PROFWATCH_SOURCE_DIR "/tests/fixtures/web/plain_empty_tls.good.yml");
  ASSERT_TRUE(plain) << plain.error().context;
  EXPECT_FALSE(plain->tls);
}

TEST(WebConfigGoldenTest, BadFilesFailWithTheirStatedError) {
  const std::vector<std::string> bad = Fixtures(".bad.yml");
  ASSERT_GE(bad.size(), 10u);
  for (const std::string& path : bad) {
    std::ifstream in(path);
    std::string first;
    std::getline(in, first);
    const std::string marker = "# error: ";
    ASSERT_EQ(first.rfind(marker, 0), 0u) << path << " states no error";
    auto config = LoadWebConfig(path);
    ASSERT_FALSE(config) << path << " loaded";
    EXPECT_EQ(config.error().context,
              "web config file " + path + ": " + first.substr(marker.size()))
        << path;
  }
}

}  // namespace
}  // namespace profwatch::web
