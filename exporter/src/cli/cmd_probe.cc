// `profwatch probe`: asks a running daemon's health endpoint and exits 0 once
// it answers 200, retrying until a deadline. For service managers that have
// no HTTP probe of their own (systemd's ExecStartPost, Slurm scripts, a
// HEALTHCHECK without curl). A plain HTTP/1.0 GET over a socket: nothing
// here needs a client library.
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/listen_address.h"
#include "cli/serve_flags.h"

namespace profwatch::cli {
namespace {

using Clock = std::chrono::steady_clock;

// One GET of `path` on host:port; the status line's code, or an error text.
Result<int> GetStatus(const std::string& host, int port, const std::string& path,
                      Clock::time_point deadline) {
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
    auto wait = [&](short events) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      pollfd p{fd, events, 0};
      return left.count() > 0 && poll(&p, 1, static_cast<int>(left.count())) == 1;
    };
    int err = 0;
    socklen_t len = sizeof err;
    if ((connect(fd, a->ai_addr, a->ai_addrlen) == 0 || (errno == EINPROGRESS && wait(POLLOUT))) &&
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
      const std::string request = "GET " + path + " HTTP/1.0\r\nHost: " + host + "\r\n\r\n";
      std::string answer;
      if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
        char buf[256];
        while (answer.find("\r\n") == std::string::npos && wait(POLLIN)) {
          const ssize_t n = recv(fd, buf, sizeof buf, 0);
          if (n <= 0) break;
          answer.append(buf, static_cast<size_t>(n));
        }
      }
      // "HTTP/1.1 200 OK"
      if (answer.starts_with("HTTP/") && answer.find(' ') != std::string::npos) {
        status = std::atoi(answer.c_str() + answer.find(' ') + 1);
      } else {
        error = "no HTTP answer";
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
  if (auto code = ParseArgs(app, "probe", args)) return *code;
  auto address = ParseListenAddress(listen);
  if (!address) {
    std::fprintf(stderr, "profwatch probe: %s\n", address.error().context.c_str());
    return 2;
  }
  auto limit = ParseDuration(timeout);
  if (!limit) {
    std::fprintf(stderr, "profwatch probe: --timeout: %s\n", limit.error().context.c_str());
    return 2;
  }
  std::string host = address->host;
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::" || host == "[::]") host = "::1";
  const Clock::time_point deadline = Clock::now() + *limit;
  std::string last;
  do {
    auto status = GetStatus(host, address->port, path, deadline);
    if (status && *status == 200) return 0;
    last = status ? "HTTP " + std::to_string(*status) : status.error().context;
    // Poll again shortly: the daemon may still be starting.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (Clock::now() < deadline);
  std::fprintf(stderr, "profwatch probe: http://%s:%d%s: %s\n", host.c_str(), address->port,
               path.c_str(), last.c_str());
  return 1;
}

}  // namespace profwatch::cli
