#include "web/listen_address.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace profwatch::web {
namespace {

tl::unexpected<Error> Invalid(const std::string& text, const std::string& why) {
  return MakeError(ErrorCode::kConfig, "invalid listen address '" + text + "': " + why +
                                           " (use host:port, e.g. 0.0.0.0:19474)");
}

struct AddrInfoDeleter {
  void operator()(addrinfo* a) const { freeaddrinfo(a); }
};
using AddrInfoPtr = std::unique_ptr<addrinfo, AddrInfoDeleter>;

// Resolves `address` for a passive (listening) socket; null when it does not.
AddrInfoPtr Resolve(const ListenAddress& address, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  const std::string port = std::to_string(address.port);
  addrinfo* out = nullptr;
  const int rc = getaddrinfo(address.host.empty() ? nullptr : address.host.c_str(), port.c_str(),
                             &hints, &out);
  if (rc != 0) {
    if (error != nullptr) *error = gai_strerror(rc);
    return nullptr;
  }
  return AddrInfoPtr(out);
}

}  // namespace

Result<ListenAddress> ParseListenAddress(const std::string& text) {
  ListenAddress address;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Invalid(text, "an IPv6 address is written [address]:port");
    }
    address.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else if (const size_t colon = text.rfind(':'); colon == std::string::npos) {
    port = text;
  } else {
    address.host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (address.host.empty()) return Invalid(text, "the host is empty");
  }
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535) {
    return Invalid(text, "the port must be a number from 0 to 65535");
  }
  address.port = std::stoi(port);
  std::string error;
  if (!address.host.empty() && !Resolve(address, &error)) {
    return Invalid(text, "the host '" + address.host + "' does not resolve (" + error + ")");
  }
  return address;
}

std::string DescribeBindFailure(const std::string& text) {
  Result<ListenAddress> address = ParseListenAddress(text);
  if (!address) return address.error().context;
  std::string error;
  AddrInfoPtr resolved = Resolve(*address, &error);
  if (!resolved) return "cannot resolve: " + error;
  const addrinfo* a = resolved.get();
  const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
  if (fd < 0) return std::string("cannot create a socket: ") + std::strerror(errno);
  // The same option civetweb sets, so a port in TIME_WAIT is not reported.
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const int rc = bind(fd, a->ai_addr, a->ai_addrlen);
  const int err = errno;
  close(fd);
  if (rc == 0) return "the HTTP server could not start on it (the address binds now; retry)";
  switch (err) {
    case EADDRINUSE:
      return "address already in use (another process listens on it; pick another port)";
    case EACCES:
      return "permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)";
    case EADDRNOTAVAIL:
      return "address not available (no interface of this host has it)";
    default:
      return std::strerror(err);
  }
}

}  // namespace profwatch::web
