// `profwatch probe`: asks a running daemon's health endpoint and exits 0 once
// it answers 200, retrying until a deadline. For service managers that have
// no HTTP probe of their own (systemd's ExecStartPost, Slurm scripts, a
// HEALTHCHECK without curl). An HTTP/1.0 GET over a socket, through TLS
// (OpenSSL) when the daemon's web config file serves HTTPS, with basic auth
// when it asks for a password.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/serve_flags.h"
#include "web/base64.h"
#include "web/listen_address.h"
#include "web/tls.h"

namespace profwatch::cli {
namespace {

using Clock = std::chrono::steady_clock;

// How to reach the daemon beyond host and port.
struct ProbeDoor {
  bool https = false;
  std::string ca_file;    // "" = the system's trust store
  std::string cert_file;  // client certificate (mTLS)
  std::string key_file;
  std::string server_name;    // name to verify; "" = the host probed
  bool insecure = false;      // skip verifying the server certificate
  std::string authorization;  // "Basic ..." or ""
};

struct SslFree {
  void operator()(SSL* s) const { SSL_free(s); }
};

Result<web::SslCtxPtr> ClientContext(const ProbeDoor& door) {
  web::SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return MakeError(ErrorCode::kConfig, web::OpenSslError("TLS handshake failed"));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  if (!door.insecure) {
    const int ok = door.ca_file.empty()
                       ? SSL_CTX_set_default_verify_paths(ctx.get())
                       : SSL_CTX_load_verify_locations(ctx.get(), door.ca_file.c_str(), nullptr);
    if (ok != 1)
      return MakeError(ErrorCode::kConfig,
                       "--ca-file: " + web::OpenSslError("TLS handshake failed"));
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  }
  if (!door.cert_file.empty() &&
      (SSL_CTX_use_certificate_chain_file(ctx.get(), door.cert_file.c_str()) != 1 ||
       SSL_CTX_use_PrivateKey_file(ctx.get(), door.key_file.c_str(), SSL_FILETYPE_PEM) != 1)) {
    return MakeError(ErrorCode::kConfig,
                     "--cert-file/--key-file: " + web::OpenSslError("TLS handshake failed"));
  }
  return ctx;
}

// Whether the server at `a` speaks TLS: a TLS handshake (certificate not
// verified, no client certificate) gets a server hello, or a TLS alert
// from the server (one requiring a client certificate says so with an
// alert). For a plain probe that got no HTTP answer: OpenSSL servers close
// a plain HTTP request without a word.
bool SpeaksTls(const addrinfo* a, Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  const long ms = std::min<long>(2000, left.count());
  if (ms <= 0) return false;
  const int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
  if (fd < 0) return false;
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  bool tls = false;
  web::SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (ctx && connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
    std::unique_ptr<SSL, SslFree> ssl(SSL_new(ctx.get()));
    SSL_set_fd(ssl.get(), fd);
    ERR_clear_error();
    tls = SSL_connect(ssl.get()) == 1;
    // An alert the server sent: its reason is offset by SSL_AD_REASON_OFFSET.
    for (unsigned long e = ERR_get_error(); e != 0 && !tls; e = ERR_get_error()) {
      tls = ERR_GET_LIB(e) == ERR_LIB_SSL && ERR_GET_REASON(e) >= SSL_AD_REASON_OFFSET;
    }
    ERR_clear_error();
  }
  close(fd);
  return tls;
}

// The error of a plain probe that got no HTTP answer from a TLS port.
constexpr const char* kSpeaksTls =
    "no HTTP answer: the port speaks TLS: probe it with --https (and --ca-file, or "
    "--insecure-skip-verify)";

// The answer's first line (or what came) to `request` over TLS on `fd`, a
// blocking socket whose reads and writes end after `ms`. A failed handshake
// sets `error` (the verification's reason when there is one).
std::string TlsExchange(int fd, SSL_CTX* tls, const std::string& host, const ProbeDoor& door,
                        const std::string& request, long ms, std::string& error) {
  std::string answer;
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  std::unique_ptr<SSL, SslFree> ssl(SSL_new(tls));
  const std::string name = door.server_name.empty() ? host : door.server_name;
  SSL_set_fd(ssl.get(), fd);
  in6_addr ip6{};
  in_addr ip4{};
  const bool is_ip =
      inet_pton(AF_INET, name.c_str(), &ip4) == 1 || inet_pton(AF_INET6, name.c_str(), &ip6) == 1;
  if (!is_ip) SSL_set_tlsext_host_name(ssl.get(), name.c_str());
  if (!door.insecure) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl.get());
    if (is_ip) {
      X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
    } else {
      X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
    }
  }
  ERR_clear_error();
  if (SSL_connect(ssl.get()) == 1 &&
      SSL_write(ssl.get(), request.data(), static_cast<int>(request.size())) ==
          static_cast<int>(request.size())) {
    char buf[256];
    while (answer.find("\r\n") == std::string::npos) {
      const int n = SSL_read(ssl.get(), buf, sizeof buf);
      if (n <= 0) break;
      answer.append(buf, static_cast<size_t>(n));
    }
  } else {
    const long verify = SSL_get_verify_result(ssl.get());
    error = verify != X509_V_OK ? std::string("TLS: ") + X509_verify_cert_error_string(verify)
                                : "TLS: " + web::OpenSslError("TLS handshake failed");
  }
  return answer;
}

// One GET of `path` on host:port; the status line's code, or an error text.
Result<int> GetStatus(const std::string& host, int port, const std::string& path,
                      const ProbeDoor& door, SSL_CTX* tls, Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return MakeError(ErrorCode::kConfig, std::string("cannot resolve: ") + gai_strerror(rc));
  }
  std::string error = "no address";
  int status = -1;
  for (addrinfo* a = found; a != nullptr && status < 0; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    auto left_ms = [&] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    };
    auto wait = [&](short events) {
      const auto left = left_ms();
      pollfd p{fd, events, 0};
      return left > 0 && poll(&p, 1, static_cast<int>(left)) == 1;
    };
    int err = 0;
    socklen_t len = sizeof err;
    if ((connect(fd, a->ai_addr, a->ai_addrlen) == 0 || (errno == EINPROGRESS && wait(POLLOUT))) &&
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
      std::string request = "GET " + path + " HTTP/1.0\r\nHost: " + host + "\r\n";
      if (!door.authorization.empty()) request += "Authorization: " + door.authorization + "\r\n";
      request += "\r\n";
      std::string answer;
      if (tls == nullptr) {
        if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size())) {
          char buf[256];
          while (answer.find("\r\n") == std::string::npos && wait(POLLIN)) {
            const ssize_t n = recv(fd, buf, sizeof buf, 0);
            if (n <= 0) break;
            answer.append(buf, static_cast<size_t>(n));
          }
        }
      } else {
        answer = TlsExchange(fd, tls, host, door, request, std::max<long>(1, left_ms()), error);
      }
      // "HTTP/1.1 200 OK"
      if (answer.starts_with("HTTP/") && answer.find(' ') != std::string::npos) {
        status = std::atoi(answer.c_str() + answer.find(' ') + 1);
      } else if (error == "no address") {
        // A TLS record's first byte (0x15 alert, 0x16 handshake) in answer
        // to plain HTTP, or a TLS handshake that succeeds: the port speaks TLS.
        const bool tls_record = !answer.empty() && (answer[0] == '\x15' || answer[0] == '\x16');
        if (tls != nullptr) {
          error = "no HTTPS answer";
        } else if (tls_record || SpeaksTls(a, deadline)) {
          error = kSpeaksTls;
        } else {
          error = "no HTTP answer";
        }
      }
    } else {
      error = std::strerror(err != 0 ? err : errno);
    }
    close(fd);
  }
  freeaddrinfo(found);
  if (status < 0) return MakeError(ErrorCode::kIo, error);
  return status;
}

}  // namespace

int RunProbe(const std::vector<std::string>& args) {
  CLI::App app{"Exit 0 once a running profwatch answers its health endpoint with 200"};
  std::string listen = "127.0.0.1:19474", path = "/-/healthy", timeout = "10s";
  app.add_option("--listen", listen,
                 "The daemon's --listen address (0.0.0.0 and :: probe loopback)")
      ->capture_default_str();
  app.add_option("--path", path, "Endpoint: /-/healthy (serving) or /-/ready (first scan done)")
      ->capture_default_str();
  app.add_option("--timeout", timeout, "Keep trying this long (e.g. 500ms, 30s, 2m)")
      ->capture_default_str();
  ProbeDoor door;
  std::string user, password_file;
  app.add_flag("--https", door.https, "The daemon serves HTTPS (its --web.config.file has TLS)");
  app.add_option("--ca-file", door.ca_file,
                 "CA certificate(s) to verify the daemon's certificate (default: the system's)");
  app.add_option("--cert-file", door.cert_file, "Client certificate, when the daemon requires one");
  app.add_option("--key-file", door.key_file, "The client certificate's key");
  app.add_option("--server-name", door.server_name,
                 "Name (or IP) the daemon's certificate must carry (default: the probed host)");
  app.add_flag("--insecure-skip-verify", door.insecure,
               "Do not verify the daemon's certificate (the connection is still encrypted)");
  app.add_option("--user", user, "Basic auth user (the daemon's basic_auth_users)");
  app.add_option("--password-file", password_file,
                 "File holding the basic auth password (first line)");
  if (auto code = ParseArgs(app, "probe", args)) return *code;
  auto address = web::ParseListenAddress(listen);
  if (!address) {
    std::fprintf(stderr, "profwatch probe: %s\n", address.error().context.c_str());
    return 2;
  }
  auto limit = ParseDuration(timeout);
  if (!limit) {
    std::fprintf(stderr, "profwatch probe: --timeout: %s\n", limit.error().context.c_str());
    return 2;
  }
  if (door.cert_file.empty() != door.key_file.empty()) {
    std::fprintf(stderr, "profwatch probe: --cert-file and --key-file go together\n");
    return 2;
  }
  if (!user.empty()) {
    std::string password;
    if (!password_file.empty()) {
      std::ifstream in(password_file);
      if (!in) {
        std::fprintf(stderr, "profwatch probe: --password-file %s: cannot be read\n",
                     password_file.c_str());
        return 2;
      }
      std::getline(in, password);
    }
    door.authorization = "Basic " + web::EncodeBase64(user + ":" + password);
  }
  web::SslCtxPtr tls;
  if (door.https) {
    auto ctx = ClientContext(door);
    if (!ctx) {
      std::fprintf(stderr, "profwatch probe: %s\n", ctx.error().context.c_str());
      return 2;
    }
    tls = std::move(*ctx);
  }
  std::string host = address->host;
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::" || host == "[::]") host = "::1";
  const Clock::time_point deadline = Clock::now() + *limit;
  std::string last;
  do {
    auto status = GetStatus(host, address->port, path, door, tls.get(), deadline);
    if (status && *status == 200) return 0;
    // An answer (401, 503), or a TLS port found behind a plain probe, says
    // more than a later try cut short by the deadline.
    if (status) {
      last = "HTTP " + std::to_string(*status);
    } else if (!last.starts_with("HTTP ") && last != kSpeaksTls) {
      last = status.error().context;
    }
    // Poll again shortly: the daemon may still be starting.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (Clock::now() < deadline);
  std::fprintf(stderr, "profwatch probe: %s://%s:%d%s: %s\n", door.https ? "https" : "http",
               host.c_str(), address->port, path.c_str(), last.c_str());
  return 1;
}

}  // namespace profwatch::cli
