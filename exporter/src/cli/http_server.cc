#include "cli/http_server.h"

#include <CivetServer.h>
#include <civetweb.h>

#include <atomic>
#include <string>

#include "cli/listen_address.h"

namespace profwatch::cli {
namespace {

// civetweb hooks are plain function pointers without a context argument we
// own, so the hook finds the server (its store and exposition) here. Set
// while a server runs.
std::atomic<const HttpServer*> g_server{nullptr};

// HTTP workers, and how long one waits for a client's request. civetweb
// gives each accepted connection a worker of its own until the request is
// read (or request_timeout_ms passes, counted from the accept, so a client
// trickling bytes is cut off as surely as a silent one). With fewer workers
// than idle clients a scrape queues behind them, a timeout per round; with
// more it is answered at once. Rendering no longer happens per worker (the
// exposition is rendered once per snapshot and shared), so a worker costs a
// thread stack's touched pages and a request buffer: enough workers for a
// hundred or so idle or stuck clients plus Prometheus' concurrent scrapes.
// docs/performance.md "The front door" has the measurements.
constexpr int kHttpWorkers = 256;
constexpr int kRequestTimeoutMs = 1000;

bool AcceptsGzip(mg_connection* conn) {
  const char* accept = mg_get_header(conn, "Accept-Encoding");
  return accept != nullptr && std::string_view(accept).find("gzip") != std::string_view::npos;
}

// /metrics: the headers, then the body's parts as they are (the shared
// snapshot part is not copied into one buffer).
int ServeMetrics(mg_connection* conn, const mg_request_info& request,
                 const expose::Exposition& exposition) {
  const bool gzip = AcceptsGzip(conn);
  const expose::Exposition::Body body = exposition.Render(gzip);
  mg_printf(conn,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            "%sContent-Length: %zu\r\nConnection: close\r\n\r\n",
            gzip ? "Content-Encoding: gzip\r\n" : "", body.size());
  if (std::string_view(request.request_method) != "HEAD") {
    mg_write(conn, body.head.data(), body.head.size());
    mg_write(conn, body.bulk->data(), body.bulk->size());
    mg_write(conn, body.tail.data(), body.tail.size());
  }
  return 200;
}

int BeginRequest(mg_connection* conn) {
  const HttpServer* server = g_server.load();
  const mg_request_info* request = mg_get_request_info(conn);
  if (server == nullptr || request == nullptr || request->local_uri == nullptr) return 0;
  if (std::string_view(request->local_uri) == "/metrics") {
    return ServeMetrics(conn, *request, server->exposition());
  }
  std::optional<HttpAnswer> answer =
      OperationalAnswer(request->local_uri, *server->store().Current(), server->landing_note());
  if (!answer) return 0;
  const char* reason = answer->status == 200 ? "OK" : "Service Unavailable";
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
            answer->status, reason, answer->content_type.c_str(), answer->body.size());
  if (std::string_view(request->request_method) != "HEAD") {
    mg_write(conn, answer->body.data(), answer->body.size());
  }
  return answer->status;
}

const CivetCallbacks& Callbacks() {
  static const CivetCallbacks callbacks = [] {
    CivetCallbacks c{};
    c.begin_request = &BeginRequest;
    return c;
  }();
  return callbacks;
}

}  // namespace

std::optional<HttpAnswer> OperationalAnswer(std::string_view uri, const snapshot::Snapshot& snap,
                                            std::string_view landing_note) {
  if (uri == "/-/healthy") return HttpAnswer{200, "text/plain; charset=utf-8", "OK\n"};
  if (uri == "/-/ready") {
    if (snap.last_scan_unix > 0) return HttpAnswer{200, "text/plain; charset=utf-8", "OK\n"};
    return HttpAnswer{503, "text/plain; charset=utf-8",
                      "not ready: no scan of the watch roots yet\n"};
  }
  if (uri == "/") {
    std::string body =
        "<!DOCTYPE html>\n<html><head><title>profwatch</title></head><body>\n"
        "<h1>profwatch</h1>\n<p>GPU profile window exporter.</p>\n";
    // The note is ours (digits and fixed words), never request input.
    if (!landing_note.empty()) body += "<p>" + std::string(landing_note) + "</p>\n";
    body +=
        "<ul>\n"
        "<li><a href=\"/metrics\">/metrics</a></li>\n"
        "<li><a href=\"/-/healthy\">/-/healthy</a></li>\n"
        "<li><a href=\"/-/ready\">/-/ready</a></li>\n"
        "</ul>\n</body></html>\n";
    return HttpAnswer{200, "text/html; charset=utf-8", std::move(body)};
  }
  return std::nullopt;
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(
    const std::string& listen, std::shared_ptr<const snapshot::SnapshotStore> store,
    std::shared_ptr<const expose::Exposition> exposition, std::string landing_note) {
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->landing_note_ = std::move(landing_note);
  server->store_ = std::move(store);
  server->exposition_ = std::move(exposition);
  g_server.store(server.get());
  try {
    // Each connection holds a civetweb worker until its request is read, so
    // idle or slow clients (port scanners, half-open health checks) must
    // neither outnumber the workers nor hold one for long.
    server->exposer_ = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", listen, "num_threads",
                                 std::to_string(kHttpWorkers), "request_timeout_ms",
                                 std::to_string(kRequestTimeoutMs)},
        &Callbacks());
  } catch (const std::exception&) {
    g_server.store(nullptr);
    // The server's own text only says binding failed; find out why.
    return MakeError(ErrorCode::kConfig, DescribeBindFailure(listen));
  }
  return server;
}

HttpServer::~HttpServer() {
  exposer_.reset();  // stops the HTTP threads before the hook loses the server
  g_server.store(nullptr);
}

std::vector<int> HttpServer::ListeningPorts() const { return exposer_->GetListeningPorts(); }

}  // namespace profwatch::cli
