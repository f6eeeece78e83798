// The front door's bound on connections that hold the server without a
// request: accepted, and not yet past their request's headers (waiting in
// civetweb's queue, in a TLS handshake, or sending their headers). civetweb
// gives each such connection a worker until its request is read or
// request_timeout_ms passes, so clients that connect and stay silent or
// trickle could otherwise hold every worker, and a scrape would wait behind
// them in the kernel's backlog.
//
// At most `limit` connections are pending. Each accept beyond that sheds
// one: the oldest connection of the peer address holding the most pending
// connections (so a client with fewer pending connections than the busiest
// address is never the one shed; among addresses with equally many, the
// oldest connection goes). The caller cuts the shed connection
// (shutdown(2)), which frees its worker at once.
//
// Thread-safety: all methods lock; called from civetweb's accept thread
// (Add) and its workers (Remove).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace profwatch::web {

class PendingConnections {
 public:
  explicit PendingConnections(size_t limit) : limit_(limit) {}

  struct Connection {
    int fd;
    std::string address;  // numeric, as getnameinfo(NI_NUMERICHOST) writes it
    int port;
  };

  // A connection accepted. Returns the one to shed (no longer pending) when
  // this one made more than `limit` pending; it is this one only when it
  // is the oldest of the busiest address (a limit of 0, or one address).
  std::optional<Connection> Add(const Connection& accepted);

  // The connection from `address`:`port` is no longer pending: its request
  // began, or the server is closing it. No effect if it is not pending.
  void Remove(const std::string& address, int port);

  size_t size() const;
  size_t limit() const { return limit_; }

 private:
  struct Entry {
    int fd;
    uint64_t order;  // accept order: lower is older
  };
  using Key = std::pair<std::string, int>;

  const size_t limit_;
  mutable std::mutex mu_;
  uint64_t next_order_ = 0;
  std::map<Key, Entry> pending_;
  std::unordered_map<std::string, size_t> per_address_;

  void EraseLocked(std::map<Key, Entry>::iterator it);
};

}  // namespace profwatch::web
