// The HTTP side of `profwatch serve`: prometheus-cpp's Exposer serves
// /metrics; before it, civetweb's begin_request hook answers the endpoints
// an operator and an orchestrator expect:
//   /           a landing page linking the others (like node_exporter's)
//   /-/healthy  200 "OK" while the process serves HTTP (liveness)
//   /-/ready    200 once the --state file is loaded and this process's
//               first scan of the roots is published (a restored snapshot
//               has no scan time); 503 before: the server starts first
// Every other path goes to the Exposer (/metrics) or is civetweb's 404.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "snapshot/snapshot.h"

namespace profwatch::cli {

struct HttpAnswer {
  int status = 200;
  std::string content_type;
  std::string body;
};

// The answer for `uri` given the published snapshot; nullopt for paths the
// Exposer (or civetweb's 404) handles. Pure: the hook's whole policy.
std::optional<HttpAnswer> OperationalAnswer(std::string_view uri, const snapshot::Snapshot& snap);

class HttpServer {
 public:
  // Listens on `listen` (checked by ParseListenAddress first). On failure the
  // error says why (DescribeBindFailure). One server per process: the hook
  // reads `store` through a process-wide pointer.
  static Result<std::unique_ptr<HttpServer>> Start(
      const std::string& listen, std::shared_ptr<const snapshot::SnapshotStore> store);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void RegisterCollectable(const std::shared_ptr<prometheus::Collectable>& collectable);
  std::vector<int> ListeningPorts() const;

 private:
  HttpServer() = default;
  std::shared_ptr<const snapshot::SnapshotStore> store_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace profwatch::cli
