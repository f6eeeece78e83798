#include "web/web_config.h"

#include <openssl/ssl.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <functional>
#include <regex>
#include <set>

namespace profwatch::web {

Error WebConfigError(const std::string& path, const std::string& what) {
  return Error{ErrorCode::kConfig, "web config file " + path + ": " + what};
}

bool Readable(const std::string& file, std::string& why) {
  if (access(file.c_str(), R_OK) != 0) {
    why = std::strerror(errno);
    return false;
  }
  return true;
}

namespace {

Error ConfigError(const std::string& path, const std::string& what) {
  return WebConfigError(path, what);
}

std::string At(const YAML::Node& node) { return "line " + std::to_string(node.Mark().line + 1); }

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

// One tls_server_config key and its value.
struct Field {
  const std::string& path;
  const YAML::Node& key;
  const YAML::Node& value;
};
using TlsKey = std::function<Status(const Field&, TlsServerConfig&)>;
constexpr const char* kTlsWhere = "tls_server_config.";

// The key that reads its value with `read` into `member`.
template <typename T>
TlsKey Into(T TlsServerConfig::*member, Result<T> (*read)(const Field&)) {
  return [member, read](const Field& f, TlsServerConfig& tls) -> Status {
    Result<T> value = read(f);
    if (!value) return tl::unexpected(value.error());
    tls.*member = std::move(*value);
    return {};
  };
}

Result<std::string> Text(const Field& f) { return Scalar(f.path, f.key, f.value, kTlsWhere); }
Result<bool> Flag(const Field& f) { return Bool(f.path, f.key, f.value, kTlsWhere); }
Result<int> Version(const Field& f) { return TlsVersion(f.path, f.key, f.value); }

// A list of Go names, translated into OpenSSL's ':'-joined list.
template <Result<std::string> (*translate)(const std::string&, const YAML::Node&,
                                           const std::vector<std::string>&)>
Result<std::string> Names(const Field& f) {
  auto names = List(f.path, f.key, f.value, kTlsWhere);
  if (!names) return tl::unexpected(names.error());
  return translate(f.path, f.value, *names);
}

Result<ClientAuth> Policy(const Field& f) {
  auto s = Scalar(f.path, f.key, f.value, kTlsWhere);
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
        f.path, At(f.value) + ": tls_server_config.client_auth_type: unknown policy '" + *s +
                    "' (NoClientCert, RequestClientCert, RequireAnyClientCert, "
                    "VerifyClientCertIfGiven, RequireAndVerifyClientCert)"));
  }
  return it->second;
}

// exporter-toolkit's options this server cannot honour; `instead`: what to use.
TlsKey Unsupported(std::string instead) {
  return [instead](const Field& f, TlsServerConfig&) -> Status {
    return tl::unexpected(
        ConfigError(f.path, At(f.key) + ": tls_server_config." + f.key.as<std::string>() +
                                ": not supported by profwatch (use " + instead + ")"));
  };
}

// Every key of tls_server_config, one line each; any other is an error.
const std::map<std::string, TlsKey>& TlsKeys() {
  using C = TlsServerConfig;
  static const std::map<std::string, TlsKey> kKeys = {
      {"cert_file", Into(&C::cert_file, &Text)},
      {"key_file", Into(&C::key_file, &Text)},
      {"client_ca_file", Into(&C::client_ca_file, &Text)},
      {"client_auth_type", Into(&C::client_auth, &Policy)},
      {"min_version", Into(&C::min_version, &Version)},
      {"max_version", Into(&C::max_version, &Version)},
      {"cipher_suites", Into(&C::cipher_list, &Names<&CipherList>)},
      {"curve_preferences", Into(&C::groups, &Names<&Groups>)},
      {"prefer_server_cipher_suites", Into(&C::prefer_server_cipher_suites, &Flag)},
      {"cert", Unsupported("cert_file")},
      {"key", Unsupported("key_file")},
      {"client_ca", Unsupported("client_ca_file")},
      {"client_allowed_sans", Unsupported("a dedicated client CA")},
  };
  return kKeys;
}

Result<TlsServerConfig> ParseTls(const std::string& path, const YAML::Node& node) {
  TlsServerConfig tls;
  if (node.IsNull()) return tls;
  if (!node.IsMap()) {
    return tl::unexpected(ConfigError(path, At(node) + ": tls_server_config: expected a map"));
  }
  bool auth_given = false;
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    auto it = TlsKeys().find(key);
    if (it == TlsKeys().end()) {
      return tl::unexpected(
          ConfigError(path, At(kv.first) + ": tls_server_config: unknown key '" + key + "'"));
    }
    if (Status set = it->second(Field{path, kv.first, kv.second}, tls); !set) {
      return tl::unexpected(set.error());
    }
    auth_given = auth_given || key == "client_auth_type";
  }
  const bool ca_given = !tls.client_ca_file.empty();
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

// The verification a policy asks for; `verify` null: OpenSSL's chain check.

}  // namespace

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
  return config;
}

}  // namespace profwatch::web
