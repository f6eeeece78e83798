// The web stage's fixed bounds, in one place (issue 62): connections,
// waits, memory kept per client and what a page lists.
//
// Thread-safety: constants.
#pragma once

#include <chrono>
#include <cstddef>

namespace profwatch::web {

// Connections without a request (queued, in a TLS handshake, or sending
// headers) at once; each accept beyond that cuts one (http_server.cc
// PendingConnections, where the reason for the number is).
inline constexpr size_t kMaxPending = 192;
// How long a scrape waits for the restored runs at most (less when
// Prometheus' own scrape timeout is shorter: MetricsHoldDeadline).
inline constexpr std::chrono::seconds kMaxMetricsHold{10};
// At most this many runs (and runs skipped for retention) are listed on the
// landing page, first by name; the rest are counted: a page for people stays
// small however many runs the roots hold (every run is on /metrics).
inline constexpr size_t kLandingMaxListed = 50;
// Successful password checks remembered per door state (basic_auth.cc);
// beyond this many the memory is dropped and rebuilt (a client cycling
// passwords gains nothing).
inline constexpr size_t kMaxCachedChecks = 1024;
// Client addresses an AuthLimiter keeps buckets for, of each kind.
inline constexpr size_t kMaxAddresses = 4096;

}  // namespace profwatch::web
