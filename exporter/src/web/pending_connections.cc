#include "web/pending_connections.h"

#include <algorithm>

namespace profwatch::web {

std::optional<PendingConnections::Connection> PendingConnections::Add(const Connection& accepted) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string& address = accepted.address;
  Key key{address, accepted.port};
  // The same address and port again: the old connection is gone (its close
  // was not seen); this one replaces it.
  if (auto old = pending_.find(key); old != pending_.end()) EraseLocked(old);
  pending_.emplace(key, Entry{accepted.fd, next_order_++});
  ++per_address_[address];
  if (pending_.size() <= limit_) return std::nullopt;
  size_t busiest = 0;
  for (const auto& [addr, count] : per_address_) busiest = std::max(busiest, count);
  auto victim = pending_.end();
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (per_address_[it->first.first] != busiest) continue;
    if (victim == pending_.end() || it->second.order < victim->second.order) victim = it;
  }
  Connection shed{victim->second.fd, victim->first.first, victim->first.second};
  EraseLocked(victim);
  return shed;
}

void PendingConnections::Remove(const std::string& address, int port) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(Key{address, port});
  if (it != pending_.end()) EraseLocked(it);
}

size_t PendingConnections::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

void PendingConnections::EraseLocked(std::map<Key, Entry>::iterator it) {
  auto count = per_address_.find(it->first.first);
  if (--count->second == 0) per_address_.erase(count);
  pending_.erase(it);
}

}  // namespace profwatch::web
