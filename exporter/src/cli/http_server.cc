#include "cli/http_server.h"

#include <CivetServer.h>
#include <civetweb.h>
#include <openssl/ssl.h>

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
                 const expose::Exposition& exposition, const std::string& extra_headers) {
  const bool gzip = AcceptsGzip(conn);
  const expose::Exposition::Body body = exposition.Render(gzip);
  mg_printf(conn,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            "%s%sContent-Length: %zu\r\nConnection: close\r\n\r\n",
            gzip ? "Content-Encoding: gzip\r\n" : "", extra_headers.c_str(), body.size());
  if (std::string_view(request.request_method) != "HEAD") {
    mg_write(conn, body.head.data(), body.head.size());
    mg_write(conn, body.bulk->data(), body.bulk->size());
    mg_write(conn, body.tail.data(), body.tail.size());
  }
  return 200;
}

// The configured response headers (web config http_server_config.headers),
// as header lines.
std::string HeaderLines(const DoorState& door) {
  std::string out;
  for (const auto& [name, value] : door.config.headers) out += name + ": " + value + "\r\n";
  return out;
}

void Answer(mg_connection* conn, const mg_request_info& request, const HttpAnswer& answer,
            const std::string& extra_headers) {
  const char* reason = answer.status == 200   ? "OK"
                       : answer.status == 401 ? "Unauthorized"
                       : answer.status == 404 ? "Not Found"
                                              : "Service Unavailable";
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\n%s%sConnection: close\r\n\r\n",
            answer.status, reason, answer.content_type.c_str(), answer.body.size(),
            answer.status == 401 ? "WWW-Authenticate: Basic realm=\"profwatch\"\r\n" : "",
            extra_headers.c_str());
  if (std::string_view(request.request_method) != "HEAD") {
    mg_write(conn, answer.body.data(), answer.body.size());
  }
}

// Every path goes through here: the door (basic auth, headers) first, then
// the endpoint; unknown paths get our 404 (behind the same door).
int BeginRequest(mg_connection* conn) {
  const HttpServer* server = g_server.load();
  const mg_request_info* request = mg_get_request_info(conn);
  if (server == nullptr || request == nullptr || request->local_uri == nullptr) return 0;
  std::shared_ptr<DoorState> door = server->door().Current();
  const std::string headers = HeaderLines(*door);
  if (door->auth->enabled() && !door->auth->Check(mg_get_header(conn, "Authorization"))) {
    Answer(conn, *request, HttpAnswer{401, "text/plain; charset=utf-8", "Unauthorized\n"}, headers);
    return 401;
  }
  if (std::string_view(request->local_uri) == "/metrics") {
    return ServeMetrics(conn, *request, server->exposition(), headers);
  }
  std::optional<HttpAnswer> answer =
      OperationalAnswer(request->local_uri, *server->store().Current(), server->landing_note());
  if (!answer) answer = HttpAnswer{404, "text/plain; charset=utf-8", "Not Found\n"};
  Answer(conn, *request, *answer, headers);
  return answer->status;
}

// TLS: civetweb takes our context (external_ssl_ctx). Its ClientHello
// callback hands each connection the context and policy of the web config
// file as it is at that moment, so certificates, client CAs and versions
// rotate without a restart.
int OnClientHello(SSL* ssl, int* alert, void*) {
  const HttpServer* server = g_server.load();
  if (server == nullptr || !server->door().ApplyTls(ssl)) {
    *alert = SSL_AD_INTERNAL_ERROR;
    return SSL_CLIENT_HELLO_ERROR;
  }
  return SSL_CLIENT_HELLO_SUCCESS;
}

// civetweb's own server-name callback would switch the connection back to
// its context; the door serves one name.
int OnServerName(SSL*, int*, void*) { return SSL_TLSEXT_ERR_NOACK; }

int ExternalSslContext(void** ssl_ctx, void*) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return -1;
  SSL_CTX_set_client_hello_cb(ctx, &OnClientHello, nullptr);
  SSL_CTX_set_tlsext_servername_callback(ctx, &OnServerName);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  *ssl_ctx = ctx;
  return 1;
}

const CivetCallbacks& Callbacks() {
  static const CivetCallbacks callbacks = [] {
    CivetCallbacks c{};
    c.begin_request = &BeginRequest;
    c.external_ssl_ctx = &ExternalSslContext;
    return c;
  }();
  return callbacks;
}

}  // namespace

std::optional<HttpAnswer> OperationalAnswer(std::string_view uri, const snapshot::Snapshot& snap,
                                            std::string_view landing_note) {
  if (uri == "/-/healthy") return HttpAnswer{200, "text/plain; charset=utf-8", "OK\n"};
  if (uri == "/-/ready") {
    if (snap.last_scan_unix <= 0) {
      return HttpAnswer{503, "text/plain; charset=utf-8",
                        "not ready: no scan of the watch roots yet\n"};
    }
    if (snap.workers_stuck > 0) {
      return HttpAnswer{503, "text/plain; charset=utf-8",
                        "not ready: " + std::to_string(snap.workers_stuck) +
                            " analysis worker(s) busy on one window longer than "
                            "--file-max-seconds\n"};
    }
    return HttpAnswer{200, "text/plain; charset=utf-8", "OK\n"};
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
    std::shared_ptr<const expose::Exposition> exposition, std::string landing_note,
    std::shared_ptr<WebDoor> door) {
  std::unique_ptr<HttpServer> server(new HttpServer());
  if (door && door->tls() && !CivetwebOpenSslShimLinked()) {
    return MakeError(ErrorCode::kConfig, "HTTPS: the C library's dlopen/dlsym were not found");
  }
  if (!door) {
    auto open = WebDoor::Open("");
    if (!open) return tl::unexpected(open.error());
    door = std::move(*open);
  }
  server->door_ = door;
  server->landing_note_ = std::move(landing_note);
  server->store_ = std::move(store);
  server->exposition_ = std::move(exposition);
  g_server.store(server.get());
  try {
    // Each connection holds a civetweb worker until its request is read, so
    // idle or slow clients (port scanners, half-open health checks) must
    // neither outnumber the workers nor hold one for long.
    server->exposer_ = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", door->tls() ? listen + "s" : listen,
                                 "num_threads", std::to_string(kHttpWorkers), "request_timeout_ms",
                                 std::to_string(kRequestTimeoutMs)},
        &Callbacks());
  } catch (const std::exception&) {
    g_server.store(nullptr);
    // The server's own text only says binding failed; find out why.
    std::string why = DescribeBindFailure(listen);
    if (door->tls()) {
      // civetweb loads OpenSSL itself, by the unversioned names (libssl.so,
      // libcrypto.so, which Debian ships in libssl-dev).
      why +=
          " (or HTTPS could not start: civetweb needs libssl.so and libcrypto.so, "
          "from Debian's libssl-dev)";
    }
    return MakeError(ErrorCode::kConfig, why);
  }
  return server;
}

HttpServer::~HttpServer() {
  exposer_.reset();  // stops the HTTP threads before the hook loses the server
  g_server.store(nullptr);
}

std::vector<int> HttpServer::ListeningPorts() const { return exposer_->GetListeningPorts(); }

}  // namespace profwatch::cli
