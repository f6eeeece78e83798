#include "cli/web_config.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <regex>
#include <set>

namespace profwatch::cli {
namespace {

// The salt and hash of the hash unknown users are checked against (of a
// password nobody sends); its cost is the users' highest (UnknownUserHash).
constexpr const char* kUnknownUserSaltAndHash =
    "tSLvidHzd9JhI4VmfDtgau39W5EBNM.BHP7x7yvmJR.tciHZI1dby";

// Successful checks remembered per door state; beyond this many the memory
// is dropped and rebuilt (a client cycling passwords gains nothing).
constexpr size_t kMaxCachedChecks = 1024;

Error ConfigError(const std::string& path, const std::string& what) {
  return Error{ErrorCode::kConfig, "web config file " + path + ": " + what};
}

std::string At(const YAML::Node& node) { return "line " + std::to_string(node.Mark().line + 1); }

std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown TLS error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

bool Readable(const std::string& file, std::string& why) {
  if (access(file.c_str(), R_OK) != 0) {
    why = std::strerror(errno);
    return false;
  }
  return true;
}

Result<std::string> Scalar(const std::string& path, const YAML::Node& key, const YAML::Node& v,
                           const std::string& where) {
  if (!v.IsScalar()) {
    return tl::unexpected(ConfigError(
        path, At(v) + ": " + where + key.as<std::string>() + ": expected a single value"));
  }
  return v.as<std::string>();
}

Result<bool> Bool(const std::string& path, const YAML::Node& key, const YAML::Node& v,
                  const std::string& where) {
  auto s = Scalar(path, key, v, where);
  if (!s) return tl::unexpected(s.error());
  if (*s == "true") return true;
  if (*s == "false") return false;
  return tl::unexpected(
      ConfigError(path, At(v) + ": " + where + key.as<std::string>() + ": expected true or false"));
}

Result<std::vector<std::string>> List(const std::string& path, const YAML::Node& key,
                                      const YAML::Node& v, const std::string& where) {
  if (v.IsNull()) return std::vector<std::string>{};
  if (!v.IsSequence()) {
    return tl::unexpected(
        ConfigError(path, At(v) + ": " + where + key.as<std::string>() + ": expected a list"));
  }
  std::vector<std::string> out;
  for (const auto& item : v) {
    if (!item.IsScalar()) {
      return tl::unexpected(ConfigError(
          path, At(item) + ": " + where + key.as<std::string>() + ": expected a list of names"));
    }
    out.push_back(item.as<std::string>());
  }
  return out;
}

Result<int> TlsVersion(const std::string& path, const YAML::Node& key, const YAML::Node& v) {
  auto s = Scalar(path, key, v, "tls_server_config.");
  if (!s) return tl::unexpected(s.error());
  if (*s == "TLS10") return TLS1_VERSION;
  if (*s == "TLS11") return TLS1_1_VERSION;
  if (*s == "TLS12") return TLS1_2_VERSION;
  if (*s == "TLS13") return TLS1_3_VERSION;
  return tl::unexpected(ConfigError(path, At(v) + ": tls_server_config." + key.as<std::string>() +
                                              ": unknown TLS version '" + *s +
                                              "' (TLS10, TLS11, TLS12, TLS13)"));
}

// Go's cipher suite names are the IANA names (Go also spells the ChaCha20
// ones without their _SHA256): OpenSSL maps those to its own. TLS 1.3
// suites are not configurable, in Go as here: they are accepted and left
// to the library's defaults.
Result<std::string> CipherList(const std::string& path, const YAML::Node& v,
                               const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& name : names) {
    if (name == "TLS_AES_128_GCM_SHA256" || name == "TLS_AES_256_GCM_SHA384" ||
        name == "TLS_CHACHA20_POLY1305_SHA256") {
      continue;
    }
    const char* ossl = OPENSSL_cipher_name(name.c_str());
    if (ossl == nullptr || std::strcmp(ossl, "(NONE)") == 0) {
      ossl = OPENSSL_cipher_name((name + "_SHA256").c_str());
    }
    if (ossl == nullptr || std::strcmp(ossl, "(NONE)") == 0) {
      return tl::unexpected(ConfigError(
          path, At(v) + ": tls_server_config.cipher_suites: unknown cipher suite '" + name + "'"));
    }
    if (!list.empty()) list += ':';
    list += ossl;
  }
  if (list.empty() && !names.empty()) list = "DEFAULT";
  return list;
}

Result<std::string> Groups(const std::string& path, const YAML::Node& v,
                           const std::vector<std::string>& names) {
  static const std::map<std::string, std::string> kGroups = {
      {"CurveP256", "P-256"}, {"CurveP384", "P-384"}, {"CurveP521", "P-521"}, {"X25519", "X25519"}};
  std::string list;
  for (const std::string& name : names) {
    auto it = kGroups.find(name);
    if (it == kGroups.end()) {
      return tl::unexpected(
          ConfigError(path, At(v) + ": tls_server_config.curve_preferences: unknown curve '" +
                                name + "' (CurveP256, CurveP384, CurveP521, X25519)"));
    }
    if (!list.empty()) list += ':';
    list += it->second;
  }
  return list;
}

Result<TlsServerConfig> ParseTls(const std::string& path, const YAML::Node& node) {
  TlsServerConfig tls;
  if (node.IsNull()) return tls;
  if (!node.IsMap()) {
    return tl::unexpected(ConfigError(path, At(node) + ": tls_server_config: expected a map"));
  }
  bool ca_given = false;
  bool auth_given = false;
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    const std::string where = "tls_server_config.";
    if (key == "cert_file" || key == "key_file" || key == "client_ca_file") {
      auto s = Scalar(path, kv.first, v, where);
      if (!s) return tl::unexpected(s.error());
      (key == "cert_file"  ? tls.cert_file
       : key == "key_file" ? tls.key_file
                           : tls.client_ca_file) = *s;
      if (key == "client_ca_file") ca_given = !s->empty();
    } else if (key == "client_auth_type") {
      auto s = Scalar(path, kv.first, v, where);
      if (!s) return tl::unexpected(s.error());
      static const std::map<std::string, ClientAuth> kAuth = {
          {"NoClientCert", ClientAuth::kNoClientCert},
          {"RequestClientCert", ClientAuth::kRequestClientCert},
          {"RequireAnyClientCert", ClientAuth::kRequireAnyClientCert},
          {"VerifyClientCertIfGiven", ClientAuth::kVerifyClientCertIfGiven},
          {"RequireAndVerifyClientCert", ClientAuth::kRequireAndVerifyClientCert}};
      auto it = kAuth.find(*s);
      if (it == kAuth.end()) {
        return tl::unexpected(ConfigError(
            path, At(v) + ": tls_server_config.client_auth_type: unknown policy '" + *s +
                      "' (NoClientCert, RequestClientCert, RequireAnyClientCert, "
                      "VerifyClientCertIfGiven, RequireAndVerifyClientCert)"));
      }
      tls.client_auth = it->second;
      auth_given = true;
    } else if (key == "min_version" || key == "max_version") {
      auto ver = TlsVersion(path, kv.first, v);
      if (!ver) return tl::unexpected(ver.error());
      (key == "min_version" ? tls.min_version : tls.max_version) = *ver;
    } else if (key == "cipher_suites") {
      auto names = List(path, kv.first, v, where);
      if (!names) return tl::unexpected(names.error());
      auto list = CipherList(path, v, *names);
      if (!list) return tl::unexpected(list.error());
      tls.cipher_list = *list;
    } else if (key == "curve_preferences") {
      auto names = List(path, kv.first, v, where);
      if (!names) return tl::unexpected(names.error());
      auto list = Groups(path, v, *names);
      if (!list) return tl::unexpected(list.error());
      tls.groups = *list;
    } else if (key == "prefer_server_cipher_suites") {
      auto b = Bool(path, kv.first, v, where);
      if (!b) return tl::unexpected(b.error());
      tls.prefer_server_cipher_suites = *b;
    } else if (key == "cert" || key == "key" || key == "client_ca" ||
               key == "client_allowed_sans") {
      return tl::unexpected(ConfigError(
          path, At(kv.first) + ": tls_server_config." + key + ": not supported by profwatch (use " +
                    (key == "client_allowed_sans" ? std::string("a dedicated client CA")
                                                  : key + "_file") +
                    ")"));
    } else {
      return tl::unexpected(
          ConfigError(path, At(kv.first) + ": tls_server_config: unknown key '" + key + "'"));
    }
  }
  const bool no_files = tls.cert_file.empty() && tls.key_file.empty();
  // Without a certificate and key the section means plain HTTP, as in
  // exporter-toolkit, unless it asks for something only TLS does.
  if (no_files && node.size() > 0) {
    for (const auto& kv : node) {
      const std::string key = kv.first.as<std::string>();
      if (key != "cert_file" && key != "key_file" && !kv.second.IsNull() &&
          !(kv.second.IsScalar() && kv.second.as<std::string>().empty())) {
        return tl::unexpected(ConfigError(path, At(node) + ": tls_server_config: " + key +
                                                    " is set but cert_file and "
                                                    "key_file are not"));
      }
    }
  }
  if (!no_files && tls.cert_file.empty()) {
    return tl::unexpected(ConfigError(path, At(node) + ": tls_server_config: missing cert_file"));
  }
  if (!no_files && tls.key_file.empty()) {
    return tl::unexpected(ConfigError(path, At(node) + ": tls_server_config: missing key_file"));
  }
  if (ca_given && (!auth_given || tls.client_auth == ClientAuth::kNoClientCert)) {
    return tl::unexpected(ConfigError(
        path, At(node) +
                  ": tls_server_config: client_ca_file is set without a client_auth_type that "
                  "uses it (RequireAndVerifyClientCert or VerifyClientCertIfGiven)"));
  }
  if (!ca_given && (tls.client_auth == ClientAuth::kRequireAndVerifyClientCert ||
                    tls.client_auth == ClientAuth::kVerifyClientCertIfGiven)) {
    return tl::unexpected(ConfigError(
        path, At(node) + ": tls_server_config: client_auth_type verifies client certificates "
                         "but no client_ca_file is set"));
  }
  const int min = tls.min_version == 0 ? TLS1_2_VERSION : tls.min_version;
  if (tls.max_version != 0 && tls.max_version < min) {
    return tl::unexpected(
        ConfigError(path, At(node) + ": tls_server_config: max_version is below min_version"));
  }
  return tls;
}

Result<std::vector<std::pair<std::string, std::string>>> ParseHttp(const std::string& path,
                                                                   const YAML::Node& node) {
  std::vector<std::pair<std::string, std::string>> headers;
  if (node.IsNull()) return headers;
  if (!node.IsMap()) {
    return tl::unexpected(ConfigError(path, At(node) + ": http_server_config: expected a map"));
  }
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (key == "http2") {
      auto b = Bool(path, kv.first, kv.second, "http_server_config.");
      if (!b) return tl::unexpected(b.error());
      if (*b) {
        return tl::unexpected(ConfigError(
            path, At(kv.first) + ": http_server_config.http2: true is not supported (profwatch "
                                 "serves HTTP/1.1; set false or leave it out)"));
      }
    } else if (key == "headers") {
      const YAML::Node& h = kv.second;
      if (h.IsNull()) continue;
      if (!h.IsMap()) {
        return tl::unexpected(
            ConfigError(path, At(h) + ": http_server_config.headers: expected a map"));
      }
      static const std::set<std::string> kAllowed = {"Content-Security-Policy", "X-Frame-Options",
                                                     "X-Content-Type-Options", "X-XSS-Protection",
                                                     "Strict-Transport-Security"};
      for (const auto& hv : h) {
        const std::string name = hv.first.as<std::string>();
        if (kAllowed.count(name) == 0) {
          return tl::unexpected(ConfigError(
              path, At(hv.first) + ": http_server_config.headers: header '" + name +
                        "' cannot be set (Content-Security-Policy, X-Frame-Options, "
                        "X-Content-Type-Options, X-XSS-Protection, Strict-Transport-Security)"));
        }
        auto value = Scalar(path, hv.first, hv.second, "http_server_config.headers.");
        if (!value) return tl::unexpected(value.error());
        std::string lower = *value;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        if (name == "X-Frame-Options" && !value->empty() && lower != "deny" &&
            lower != "sameorigin") {
          return tl::unexpected(
              ConfigError(path, At(hv.second) + ": X-Frame-Options: must be deny or sameorigin"));
        }
        if (name == "X-Content-Type-Options" && !value->empty() && lower != "nosniff") {
          return tl::unexpected(
              ConfigError(path, At(hv.second) + ": X-Content-Type-Options: must be nosniff"));
        }
        if (value->find_first_of("\r\n") != std::string::npos) {
          return tl::unexpected(
              ConfigError(path, At(hv.second) + ": " + name + ": a header value is one line"));
        }
        if (!value->empty()) headers.emplace_back(name, *value);
      }
    } else {
      return tl::unexpected(
          ConfigError(path, At(kv.first) + ": http_server_config: unknown key '" + key + "'"));
    }
  }
  return headers;
}

Result<std::map<std::string, std::string>> ParseUsers(const std::string& path,
                                                      const YAML::Node& node) {
  std::map<std::string, std::string> users;
  if (node.IsNull()) return users;
  if (!node.IsMap()) {
    return tl::unexpected(
        ConfigError(path, At(node) + ": basic_auth_users: expected a map of user: bcrypt hash"));
  }
  // bcrypt in its modular crypt form: $2a$, $2b$ or $2y$, a two-digit cost,
  // 22 characters of salt and 31 of hash.
  static const std::regex kBcrypt(R"(^\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}$)");
  for (const auto& kv : node) {
    const std::string user = kv.first.as<std::string>();
    if (user.find(':') != std::string::npos) {
      return tl::unexpected(
          ConfigError(path, At(kv.first) + ": basic_auth_users: user '" + user + "' contains ':'"));
    }
    auto hash = Scalar(path, kv.first, kv.second, "basic_auth_users.");
    if (!hash) return tl::unexpected(hash.error());
    if (!std::regex_match(*hash, kBcrypt)) {
      return tl::unexpected(ConfigError(path, At(kv.second) + ": basic_auth_users." + user +
                                                  ": not a bcrypt hash ($2y$10$ and 53 "
                                                  "characters, e.g. from htpasswd -nBC 10)"));
    }
    users[user] = *hash;
  }
  return users;
}

bool CryptMatches(const std::string& password, const std::string& hash) {
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_rn(password.c_str(), hash.c_str(), data.get(), sizeof(crypt_data));
  if (out == nullptr || out[0] == '*') return false;
  const size_t n = std::strlen(out);
  return n == hash.size() && CRYPTO_memcmp(out, hash.data(), n) == 0;
}

std::string Sha256(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(digest), len);
}

std::optional<std::string> DecodeBase64(std::string_view in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+') {
      v = 62;
    } else if (c == '/') {
      v = 63;
    } else if (c == '=') {
      ++pad;
      continue;
    } else {
      return std::nullopt;
    }
    if (pad > 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (pad > 2) return std::nullopt;
  return out;
}

int NoVerify(int, X509_STORE_CTX*) { return 1; }

// The verification a policy asks for; `verify` null: OpenSSL's chain check.
int VerifyMode(ClientAuth auth, SSL_verify_cb* verify) {
  *verify = nullptr;
  switch (auth) {
    case ClientAuth::kNoClientCert:
      return SSL_VERIFY_NONE;
    case ClientAuth::kRequestClientCert:
      *verify = &NoVerify;
      return SSL_VERIFY_PEER;
    case ClientAuth::kRequireAnyClientCert:
      *verify = &NoVerify;
      return SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    case ClientAuth::kVerifyClientCertIfGiven:
      return SSL_VERIFY_PEER;
    case ClientAuth::kRequireAndVerifyClientCert:
      return SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  }
  return SSL_VERIFY_NONE;
}

}  // namespace

void SslCtxDeleter::operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }

Result<SslCtxPtr> BuildServerContext(const TlsServerConfig& tls, const std::string& path) {
  auto fail = [&](const std::string& what) {
    return tl::unexpected(ConfigError(path, "tls_server_config: " + what));
  };
  std::string why;
  if (!Readable(tls.cert_file, why)) return fail("cert_file " + tls.cert_file + ": " + why);
  if (!Readable(tls.key_file, why)) return fail("key_file " + tls.key_file + ": " + why);
  if (!tls.client_ca_file.empty() && !Readable(tls.client_ca_file, why)) {
    return fail("client_ca_file " + tls.client_ca_file + ": " + why);
  }
  ERR_clear_error();
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) return fail("cannot create a TLS context: " + OpenSslError());
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), tls.cert_file.c_str()) != 1) {
    return fail("cert_file " + tls.cert_file + ": " + OpenSslError());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return fail("key_file " + tls.key_file + ": " + OpenSslError());
  }
  if (SSL_CTX_check_private_key(ctx.get()) != 1) {
    return fail("key_file " + tls.key_file + " does not match cert_file " + tls.cert_file);
  }
  SSL_CTX_set_min_proto_version(ctx.get(), tls.min_version == 0 ? TLS1_2_VERSION : tls.min_version);
  SSL_CTX_set_max_proto_version(ctx.get(), tls.max_version);
  if (!tls.cipher_list.empty() &&
      SSL_CTX_set_cipher_list(ctx.get(), tls.cipher_list.c_str()) != 1) {
    return fail("cipher_suites: " + OpenSslError());
  }
  if (!tls.groups.empty() && SSL_CTX_set1_groups_list(ctx.get(), tls.groups.c_str()) != 1) {
    return fail("curve_preferences: " + OpenSslError());
  }
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  if (tls.prefer_server_cipher_suites) {
    SSL_CTX_set_options(ctx.get(), SSL_OP_CIPHER_SERVER_PREFERENCE);
  }
  // Sessions are not resumed: each connection is checked against the
  // policy of the file as it is then.
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_TICKET);
  SSL_CTX_set_num_tickets(ctx.get(), 0);
  static const unsigned char kSessionContext[] = "profwatch";
  SSL_CTX_set_session_id_context(ctx.get(), kSessionContext, sizeof kSessionContext - 1);
  if (!tls.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx.get(), tls.client_ca_file.c_str(), nullptr) != 1) {
      return fail("client_ca_file " + tls.client_ca_file + ": " + OpenSslError());
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(tls.client_ca_file.c_str());
    if (names == nullptr) {
      return fail("client_ca_file " + tls.client_ca_file + ": no certificate in it");
    }
    SSL_CTX_set_client_CA_list(ctx.get(), names);
  }
  SSL_verify_cb verify = nullptr;
  const int mode = VerifyMode(tls.client_auth, &verify);  // sets `verify`
  SSL_CTX_set_verify(ctx.get(), mode, verify);
  return ctx;
}

Result<WebConfig> LoadWebConfig(const std::string& path) {
  WebConfig config;
  config.path = path;
  std::string why;
  if (!Readable(path, why)) return tl::unexpected(ConfigError(path, "cannot be read: " + why));
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return tl::unexpected(ConfigError(path, "cannot be read"));
  } catch (const YAML::Exception& e) {
    return tl::unexpected(ConfigError(path, "line " + std::to_string(e.mark.line + 1) +
                                                ", column " + std::to_string(e.mark.column + 1) +
                                                ": " + e.msg));
  }
  if (root.IsNull()) return config;
  if (!root.IsMap()) {
    return tl::unexpected(ConfigError(path, At(root) + ": expected a map (tls_server_config, "
                                                       "http_server_config, basic_auth_users)"));
  }
  try {
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      if (key == "tls_server_config") {
        auto tls = ParseTls(path, kv.second);
        if (!tls) return tl::unexpected(tls.error());
        if (!tls->cert_file.empty()) config.tls = std::move(*tls);
      } else if (key == "http_server_config") {
        auto headers = ParseHttp(path, kv.second);
        if (!headers) return tl::unexpected(headers.error());
        config.headers = std::move(*headers);
      } else if (key == "basic_auth_users") {
        auto users = ParseUsers(path, kv.second);
        if (!users) return tl::unexpected(users.error());
        config.users = std::move(*users);
      } else if (key == "rate_limit") {
        return tl::unexpected(
            ConfigError(path, At(kv.first) + ": rate_limit: not supported by profwatch"));
      } else {
        return tl::unexpected(ConfigError(path, At(kv.first) + ": unknown key '" + key + "'"));
      }
    }
  } catch (const YAML::Exception& e) {
    return tl::unexpected(
        ConfigError(path, "line " + std::to_string(e.mark.line + 1) + ": " + e.msg));
  }
  if (config.tls) {
    auto ctx = BuildServerContext(*config.tls, path);
    if (!ctx) return tl::unexpected(ctx.error());
  }
  return config;
}

std::string BasicAuth::UnknownUserHash(const std::map<std::string, std::string>& users) {
  int cost = 4;  // bcrypt's least; no users: no check at all
  for (const auto& [user, hash] : users) {
    // ParseUsers checked the form: $2x$NN$...
    cost = std::max(cost, std::stoi(hash.substr(4, 2)));
  }
  char prefix[8];
  std::snprintf(prefix, sizeof prefix, "$2b$%02d$", cost);
  return prefix + std::string(kUnknownUserSaltAndHash);
}

bool BasicAuth::Check(const char* authorization) {
  std::string user, password;
  bool parsed = false;
  if (authorization != nullptr) {
    std::string_view h(authorization);
    if (h.size() > 6 && (h.substr(0, 6) == "Basic " || h.substr(0, 6) == "basic ")) {
      h.remove_prefix(6);
      while (!h.empty() && h.front() == ' ') h.remove_prefix(1);
      if (auto decoded = DecodeBase64(h)) {
        const size_t colon = decoded->find(':');
        if (colon != std::string::npos) {
          user = decoded->substr(0, colon);
          password = decoded->substr(colon + 1);
          parsed = true;
        }
      }
    }
  }
  if (!parsed) return false;
  // libcrypt reads the password up to its first NUL; Go's bcrypt (exporter-
  // toolkit) reads every byte, so the right password followed by a NUL and
  // anything else is wrong there. It is refused here before any look-up.
  if (password.find('\0') != std::string::npos) return false;
  auto it = users_.find(user);
  const bool known = it != users_.end();
  const std::string& hash = known ? it->second : unknown_user_hash_;
  std::string key;
  key.reserve(user.size() + password.size() + hash.size() + 2);
  key.append(user).push_back('\0');
  key.append(password).push_back('\0');
  key.append(hash);
  const std::string digest = Sha256(key);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (known && good_.count(digest) > 0) return true;
  }
  const bool match = CryptMatches(password, hash);
  if (!known || !match) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (good_.size() >= kMaxCachedChecks) good_.clear();
  good_.insert(digest);
  return true;
}

WebDoor::Signature WebDoor::Sign(const WebConfig* config, const std::string& path) {
  std::vector<std::string> files{path};
  if (config != nullptr && config->tls) {
    files.push_back(config->tls->cert_file);
    files.push_back(config->tls->key_file);
    if (!config->tls->client_ca_file.empty()) files.push_back(config->tls->client_ca_file);
  }
  Signature sig;
  for (const std::string& f : files) {
    struct stat st {};
    std::string id = "missing";
    if (stat(f.c_str(), &st) == 0) {
      id = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
           std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_ctim.tv_sec) + "." +
           std::to_string(st.st_ctim.tv_nsec);
    }
    sig.emplace_back(f, id);
  }
  return sig;
}

namespace {

Result<std::shared_ptr<DoorState>> LoadState(const std::string& path) {
  auto config = LoadWebConfig(path);
  if (!config) return tl::unexpected(config.error());
  auto state = std::make_shared<DoorState>();
  if (config->tls) {
    auto ctx = BuildServerContext(*config->tls, path);
    if (!ctx) return tl::unexpected(ctx.error());
    state->ssl_ctx = std::move(*ctx);
  }
  state->auth = std::make_unique<BasicAuth>(config->users);
  state->config = std::move(*config);
  return state;
}

}  // namespace

Result<std::unique_ptr<WebDoor>> WebDoor::Open(const std::string& path, Hooks hooks) {
  std::unique_ptr<WebDoor> door(new WebDoor());
  door->path_ = path;
  door->hooks_ = std::move(hooks);
  if (path.empty()) {
    door->state_ = std::make_shared<DoorState>();
    door->state_->auth = std::make_unique<BasicAuth>(std::map<std::string, std::string>{});
    return door;
  }
  // The signature before the read: a change during the read is seen next time.
  Signature before = Sign(nullptr, path);
  auto state = LoadState(path);
  if (!state) return tl::unexpected(state.error());
  door->tls_ = (*state)->ssl_ctx != nullptr;
  door->loaded_sig_ = Sign(&(*state)->config, path);
  door->loaded_sig_.front() = before.front();
  door->state_ = std::move(*state);
  return door;
}

std::shared_ptr<DoorState> WebDoor::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  if (path_.empty()) return state_;
  Signature now = Sign(&state_->config, path_);
  if (now == loaded_sig_ || now == failed_sig_) return state_;
  Signature before = Sign(nullptr, path_);
  auto state = LoadState(path_);
  std::string error;
  if (!state) {
    error = state.error().context;
  } else if (((*state)->ssl_ctx != nullptr) != tls_) {
    error = "web config file " + path_ + ": switching TLS " + (tls_ ? "off" : "on") +
            " needs a restart (the listening socket's scheme is fixed)";
  }
  if (!error.empty()) {
    failed_sig_ = now;
    spdlog::warn("web config reload failed, keeping the previous one error={}", error);
    if (hooks_.reload_failed) hooks_.reload_failed();
    if (hooks_.reload_result) hooks_.reload_result(false);
    return state_;
  }
  loaded_sig_ = Sign(&(*state)->config, path_);
  loaded_sig_.front() = before.front();
  failed_sig_.clear();
  state_ = std::move(*state);
  spdlog::info("web config reloaded path={} tls={} users={}", path_, tls_,
               state_->config.users.size());
  if (hooks_.reload_result) hooks_.reload_result(true);
  return state_;
}

bool WebDoor::ApplyTls(SSL* ssl) {
  std::shared_ptr<DoorState> state = Current();
  if (!state->ssl_ctx) return false;
  const TlsServerConfig& tls = *state->config.tls;
  // The context carries the certificate, key and client CA store; the rest
  // was copied into the connection when it was created, so set it again.
  if (SSL_set_SSL_CTX(ssl, state->ssl_ctx.get()) == nullptr) return false;
  SSL_verify_cb verify = nullptr;
  const int mode = VerifyMode(tls.client_auth, &verify);  // sets `verify`
  SSL_set_verify(ssl, mode, verify);
  SSL_set_min_proto_version(ssl, tls.min_version == 0 ? TLS1_2_VERSION : tls.min_version);
  SSL_set_max_proto_version(ssl, tls.max_version);
  if (!tls.cipher_list.empty()) SSL_set_cipher_list(ssl, tls.cipher_list.c_str());
  if (!tls.groups.empty()) SSL_set1_groups_list(ssl, tls.groups.c_str());
  SSL_set_options(ssl, SSL_CTX_get_options(state->ssl_ctx.get()));
  if (!tls.prefer_server_cipher_suites) SSL_clear_options(ssl, SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_set_num_tickets(ssl, 0);
  return true;
}

}  // namespace profwatch::cli
