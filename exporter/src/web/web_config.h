// The front door's configuration: `serve --web.config.file FILE`, in the
// format of Prometheus' exporter-toolkit (the file node_exporter and other
// exporters take), for the part of it profwatch implements:
//
//   tls_server_config:       cert_file, key_file, client_ca_file,
//                            client_auth_type, min_version, max_version,
//                            cipher_suites, prefer_server_cipher_suites,
//                            curve_preferences
//   http_server_config:      headers (the five the toolkit allows), http2
//                            (false only: the server speaks HTTP/1.1)
//   basic_auth_users:        user -> bcrypt hash
//
// Every other key, and the toolkit's options this server cannot honour
// (inline cert/key/client_ca, client_allowed_sans, rate_limit, http2: true),
// is an error naming the file, the key and its line. docs/security.md.
//
// What the server does with it: web/tls.h (the TLS context), web/basic_auth.h,
// web/door.h (reloads).
//
// Thread-safety: LoadWebConfig is reentrant.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace profwatch::web {

// exporter-toolkit's client_auth_type values (Go's tls.ClientAuthType).
enum class ClientAuth {
  kNoClientCert,
  kRequestClientCert,
  kRequireAnyClientCert,
  kVerifyClientCertIfGiven,
  kRequireAndVerifyClientCert,
};

struct TlsServerConfig {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
  ClientAuth client_auth = ClientAuth::kNoClientCert;
  int min_version = 0;      // OpenSSL's TLS1_x_VERSION; 0 = TLS 1.2
  int max_version = 0;      // 0 = the newest (TLS 1.3)
  std::string cipher_list;  // OpenSSL names, ':'-joined; "" = default
  bool prefer_server_cipher_suites = true;
  std::string groups;  // OpenSSL group names, ':'-joined
};

struct WebConfig {
  std::string path;
  std::optional<TlsServerConfig> tls;                        // nullopt: plain HTTP
  std::map<std::string, std::string> users;                  // user -> bcrypt hash
  std::vector<std::pair<std::string, std::string>> headers;  // added to every answer
};

// Reads and checks `path`: the YAML, every key, the bcrypt hashes' form.
// kConfig errors start "web config file PATH: " and name the key and line.
// The files it names are read when the TLS context is built (web/tls.h).
Result<WebConfig> LoadWebConfig(const std::string& path);

// The error `what` about the web config file `path`, as LoadWebConfig and
// BuildServerContext word it.
Error WebConfigError(const std::string& path, const std::string& what);

// Whether `file` can be read; `why` is the system's reason when not.
bool Readable(const std::string& file, std::string& why);

}  // namespace profwatch::web
