// The --listen address: checked before the HTTP server is started, and a
// failed start explained in words an operator can act on. The HTTP server
// (civetweb, under prometheus-cpp) only reports that binding failed.
#pragma once

#include <string>

#include "core/result.h"

namespace profwatch::web {

struct ListenAddress {
  std::string host;  // "" for a bare port (all addresses)
  int port = 0;      // 0: an ephemeral port
};

// Accepts `port`, `host:port` and `[ipv6]:port` with a host that resolves.
// kConfig "invalid listen address '<text>': <why>" otherwise.
Result<ListenAddress> ParseListenAddress(const std::string& text);

// Why `text` cannot be bound, found by binding it once ourselves:
// "address already in use", "permission denied (...)", "address not
// available on this host", ... Called after the HTTP server failed to start.
std::string DescribeBindFailure(const std::string& text);

}  // namespace profwatch::web
