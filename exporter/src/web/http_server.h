// The HTTP side of `profwatch serve`: civetweb (its C++ CivetServer, whose
// user context is this server, so its hooks need no process-wide state)
// with a begin_request hook that answers:
//   /metrics    the exposition (expose/exposition.h: the snapshot's text is
//               rendered once per snapshot and shared by concurrent scrapes;
//               gzip when the client accepts it)
//   /           a landing page linking the others (like node_exporter's)
//   /-/healthy  200 "OK" while the process serves HTTP (liveness)
//   /runbook    the alerts' runbook of this build (web/runbook.h), an anchor
//               per alert: where the rules' runbook_url links point by
//               default; also at /runbook/alerts-and-dashboards.md, so the
//               rules' external base (profwatch_runbook_base_url) may name
//               a daemon's /runbook (https, a proxy's path)
//   /-/ready    200 once the --state file is loaded and this process's
//               first scan of the roots is published (a restored snapshot
//               has no scan time); 503 before: the server starts first,
//               and 503 while an analysis worker is stuck (busy on one
//               window longer than --file-max-seconds)
// Every other path is 404. Every path is behind the same door: the web
// config file's basic auth (401 without) and headers, and TLS when the file
// configures it (web/web_config.h, web/door.h).
//
// The door keeps accepting: connections without a request yet are bounded
// (web/pending_connections.h; past the bound the oldest of the busiest
// address is cut), so silent, trickling or reconnecting clients never hold
// every worker and a scrape never waits in the kernel's backlog behind them.
#pragma once

#include <sys/socket.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "expose/exposition.h"
#include "snapshot/snapshot.h"
#include "web/door.h"
#include "web/pending_connections.h"

class CivetServer;

namespace profwatch::web {

struct HttpAnswer {
  int status = 200;
  std::string content_type;
  std::string body;
  // Cache-Control: what changes is never cached; the runbook is fixed for
  // the binary's life.
  std::string cache_control = "no-store";
};

// The answer for `uri` given the published snapshot; nullopt for /metrics
// and for paths civetweb answers 404. Pure: the hook's policy but /metrics.
// `landing_note`: one line of plain text the landing page shows (serve
// --shard: which shard this is); empty: none.
std::optional<HttpAnswer> OperationalAnswer(std::string_view uri, const snapshot::Snapshot& snap,
                                            std::string_view landing_note = {});

// True once civetweb_compat.cc's look-up answers are linked in (they make
// Debian 12's civetweb work with OpenSSL 3); Start calls it so they are.
bool CivetwebOpenSslShimLinked();

// Called by the executable's accept() (civetweb_compat.cc) for every
// connection civetweb accepts: registers it as pending with the running
// server and cuts the connection that makes room, if any.
void ConnectionAccepted(int fd, const sockaddr* peer, socklen_t peer_len);

class HttpServer {
 public:
  // Listens on `listen` (checked by ParseListenAddress first). On failure the
  // error says why (DescribeBindFailure). Connections are bounded while
  // pending (ConnectionAccepted) for the server started last.
  static Result<std::unique_ptr<HttpServer>> Start(
      const std::string& listen, std::shared_ptr<const snapshot::SnapshotStore> store,
      std::shared_ptr<const expose::Exposition> exposition, std::string landing_note = {},
      std::shared_ptr<WebDoor> door = nullptr);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  std::vector<int> ListeningPorts() const;
  const snapshot::SnapshotStore& store() const { return *store_; }
  const expose::Exposition& exposition() const { return *exposition_; }
  const std::string& landing_note() const { return landing_note_; }
  WebDoor& door() const { return *door_; }
  PendingConnections& pending() const { return *pending_; }

 private:
  HttpServer() = default;
  std::shared_ptr<const snapshot::SnapshotStore> store_;
  std::shared_ptr<const expose::Exposition> exposition_;
  std::string landing_note_;
  std::shared_ptr<WebDoor> door_;
  std::unique_ptr<PendingConnections> pending_;
  std::unique_ptr<CivetServer> civet_;
};

}  // namespace profwatch::web
