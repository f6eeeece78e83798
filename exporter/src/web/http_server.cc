#include "web/http_server.h"

#include <CivetServer.h>
#include <civetweb.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>

#include "expose/snapshot_collectable.h"
#include "web/limits.h"
#include "web/listen_address.h"
#include "web/runbook.h"

namespace profwatch::web {
namespace {

// The server whose connection civetweb calls about: civetweb's user data is
// the CivetServer, whose user context is the HttpServer that started it.
const HttpServer* ServerOf(const mg_connection* conn) {
  const mg_context* ctx = mg_get_context(conn);
  const auto* civet = ctx ? static_cast<const CivetServer*>(mg_get_user_data(ctx)) : nullptr;
  return civet ? static_cast<const HttpServer*>(civet->getUserContext()) : nullptr;
}

// The server the accept() override hands new connections to. accept() is a
// process-wide symbol (civetweb_compat.cc) called with nothing but the
// listening socket, so this one slot is the only state the server shares
// with the process; it is set while a server runs.
std::atomic<const HttpServer*> g_accepting{nullptr};

// HTTP workers, and how long one waits for a client's request. civetweb
// gives each accepted connection a worker of its own until the request is
// read (or request_timeout_ms passes, counted from the accept, so a client
// trickling bytes is cut off as surely as a silent one). At most
// kMaxPending connections may be without a request (queued, in a TLS
// handshake, or sending headers); each accept beyond that cuts one
// (PendingConnections), so kHttpWorkers - kMaxPending workers are left
// for requests being answered (Prometheus' scrapes, probes), and while
// fewer than that many are, civetweb's accept thread never waits for a
// worker: a scrape is accepted behind at most the backlog's connections,
// each cut or queued at once.
// A worker costs a thread stack's touched pages and a request buffer (the
// exposition is rendered once per snapshot and shared).
constexpr int kHttpWorkers = 256;
constexpr int kRequestTimeoutMs = 1000;
// The kernel's queue of connections not yet accepted; it caps this at
// net.core.somaxconn (what Go's net package asks for). A full one drops
// new connections' handshakes, which clients retry only after a second.
constexpr int kListenBacklog = 4096;

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
                       : answer.status == 429 ? "Too Many Requests"
                                              : "Service Unavailable";
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: %s\r\n%s%sConnection: close\r\n\r\n",
            answer.status, reason, answer.content_type.c_str(), answer.body.size(),
            answer.cache_control.c_str(),
            answer.status == 401   ? "WWW-Authenticate: Basic realm=\"profwatch\"\r\n"
            : answer.status == 429 ? "Retry-After: 2\r\n"
                                   : "",
            extra_headers.c_str());
  if (std::string_view(request.request_method) != "HEAD") {
    mg_write(conn, answer.body.data(), answer.body.size());
  }
}

// How long a scrape waits for the restored runs: Prometheus's own scrape
// timeout (the header it sends) less a margin for the answer, else
// kMaxMetricsHold; never longer than kMaxMetricsHold.
std::chrono::steady_clock::time_point MetricsHoldDeadline(mg_connection* conn) {
  std::chrono::duration<double> hold = kMaxMetricsHold;
  if (const char* t = mg_get_header(conn, "X-Prometheus-Scrape-Timeout-Seconds")) {
    char* end = nullptr;
    const double s = std::strtod(t, &end);
    if (end != t && s > 0) hold = std::min(hold, std::chrono::duration<double>(s * 0.9));
  }
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(hold);
}

HttpAnswer StartingAnswer() {
  return HttpAnswer{503, "text/plain; charset=utf-8",
                    "not ready: starting, restoring the runs of --state\n"};
}

// Every path goes through here: the door (basic auth, headers) first, then
// the endpoint; unknown paths get our 404 (behind the same door).
int BeginRequest(mg_connection* conn) {
  const HttpServer* server = ServerOf(conn);
  const mg_request_info* request = mg_get_request_info(conn);
  if (server == nullptr || request == nullptr) return 0;
  server->pending().Remove(request->remote_addr, request->remote_port);
  if (request->local_uri == nullptr) return 0;
  std::shared_ptr<DoorState> door = server->door().Current();
  const std::string headers = HeaderLines(*door);
  const AuthVerdict verdict =
      server->door().Authorize(*door, mg_get_header(conn, "Authorization"), request->remote_addr);
  if (verdict == AuthVerdict::kRateLimited) {
    Answer(conn, *request,
           HttpAnswer{429, "text/plain; charset=utf-8", "Too many failed logins, retry later\n"},
           headers);
    return 429;
  }
  if (verdict != AuthVerdict::kOk) {
    Answer(conn, *request, HttpAnswer{401, "text/plain; charset=utf-8", "Unauthorized\n"}, headers);
    return 401;
  }
  const std::string_view uri = request->local_uri;
  if (uri == "/metrics") {
    // Until the daemon's first publish (its --state restored) the store
    // holds no run: an answer then would make Prometheus mark every run's
    // series stale and resolve their alerts. Held instead, up to the
    // scrape's own timeout, then refused (a failed scrape, which the
    // shipped alerts ride over with keep_firing_for).
    if (!server->store().WaitPublished(MetricsHoldDeadline(conn))) {
      Answer(conn, *request, StartingAnswer(), headers);
      return 503;
    }
    return ServeMetrics(conn, *request, server->exposition(), headers);
  }
  if (uri == "/-/ready" && !server->store().Published()) {
    Answer(conn, *request, StartingAnswer(), headers);
    return 503;
  }
  std::optional<HttpAnswer> answer =
      OperationalAnswer(uri, *server->store().Current(), server->landing_note());
  if (!answer) answer = HttpAnswer{404, "text/plain; charset=utf-8", "Not Found\n"};
  Answer(conn, *request, *answer, headers);
  return answer->status;
}

// civetweb closes a connection (after its request, or without one: a
// timeout, a failed handshake, a cut): it is no longer pending. Called
// before the socket is closed, so a pending entry never names a closed fd.
void ConnectionClose(const mg_connection* conn) {
  const HttpServer* server = ServerOf(conn);
  const mg_request_info* request = mg_get_request_info(conn);
  if (server == nullptr || request == nullptr) return;
  server->pending().Remove(request->remote_addr, request->remote_port);
}

// The peer of `fd` as civetweb names it (remote_addr: getnameinfo's numeric
// host; remote_port).
std::optional<PendingConnections::Connection> Peer(int fd, const sockaddr* peer, socklen_t len) {
  char host[NI_MAXHOST];
  if (getnameinfo(peer, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) {
    return std::nullopt;
  }
  int port = 0;
  if (peer->sa_family == AF_INET) {
    port = ntohs(reinterpret_cast<const sockaddr_in*>(peer)->sin_port);
  } else if (peer->sa_family == AF_INET6) {
    port = ntohs(reinterpret_cast<const sockaddr_in6*>(peer)->sin6_port);
  } else {
    return std::nullopt;
  }
  return PendingConnections::Connection{fd, host, port};
}

// Cuts a shed connection: shutdown(2) wakes its worker (a read returns end
// of file), which closes it. The fd is checked to still be that peer's.
void Cut(const PendingConnections::Connection& shed) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getpeername(shed.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
  auto now = Peer(shed.fd, reinterpret_cast<const sockaddr*>(&addr), len);
  if (!now || now->address != shed.address || now->port != shed.port) return;
  shutdown(shed.fd, SHUT_RDWR);
}

// TLS: civetweb takes our context (external_ssl_ctx). Its ClientHello
// callback hands each connection the context and policy of the web config
// file as it is at that moment, so certificates, client CAs and versions
// rotate without a restart.
// `arg`: the CivetServer (civetweb's user data).
int OnClientHello(SSL* ssl, int* alert, void* arg) {
  const auto* civet = static_cast<const CivetServer*>(arg);
  const auto* server = civet ? static_cast<const HttpServer*>(civet->getUserContext()) : nullptr;
  if (server == nullptr || !server->door().ApplyTls(ssl)) {
    *alert = SSL_AD_INTERNAL_ERROR;
    return SSL_CLIENT_HELLO_ERROR;
  }
  return SSL_CLIENT_HELLO_SUCCESS;
}

// civetweb's own server-name callback would switch the connection back to
// its context; the door serves one name.
int OnServerName(SSL*, int*, void*) { return SSL_TLSEXT_ERR_NOACK; }

int ExternalSslContext(void** ssl_ctx, void* civet) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return -1;
  SSL_CTX_set_client_hello_cb(ctx, &OnClientHello, civet);
  SSL_CTX_set_tlsext_servername_callback(ctx, &OnServerName);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  *ssl_ctx = ctx;
  return 1;
}

const CivetCallbacks& Callbacks() {
  static const CivetCallbacks callbacks = [] {
    CivetCallbacks c{};
    c.begin_request = &BeginRequest;
    c.connection_close = &ConnectionClose;
    c.external_ssl_ctx = &ExternalSslContext;
    return c;
  }();
  return callbacks;
}

// Text for HTML: root and run names come from directory names on disk, which
// anyone who can write under a root chooses.
std::string EscapeHtml(std::string_view text) {
  std::string out;
  for (char c : expose::ValidUtf8(text)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Unix seconds as "YYYY-MM-DD HH:MM:SS UTC".
std::string FormatUtc(double unix_seconds) {
  const time_t t = static_cast<time_t>(unix_seconds);
  tm parts{};
  gmtime_r(&t, &parts);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &parts);
  return buf;
}

// The landing page: version, the watch roots, how many runs in how many
// jobs (and how many with a failed latest window), the first runs (their
// window, or why it failed), and the endpoints.
std::string LandingPage(const snapshot::Snapshot& snap, std::string_view landing_note) {
  const expose::BuildInfo build = expose::DefaultBuildInfo();
  std::string body =
      "<!DOCTYPE html>\n<html><head><title>profwatch</title></head><body>\n"
      "<h1>profwatch</h1>\n<p>GPU profile window exporter, version " +
      EscapeHtml(build.version) + " (revision " + EscapeHtml(build.revision) + ").</p>\n";
  if (!landing_note.empty()) body += "<p>" + EscapeHtml(landing_note) + "</p>\n";
  body +=
      "<ul>\n"
      "<li><a href=\"/metrics\">/metrics</a></li>\n"
      "<li><a href=\"/-/healthy\">/-/healthy</a></li>\n"
      "<li><a href=\"/-/ready\">/-/ready</a></li>\n"
      "<li><a href=\"/runbook\">/runbook</a> (the alerts' runbook)</li>\n"
      "</ul>\n";
  body += "<h2>Watch roots</h2>\n";
  if (snap.watch_roots.empty()) body += "<p>none scanned yet</p>\n";
  body += "<ul>\n";
  for (const auto& [root, readable] : snap.watch_roots) {
    body += "<li>" + EscapeHtml(root) + (readable ? "" : " (not readable)") + "</li>\n";
  }
  body += "</ul>\n<h2>Runs</h2>\n";
  if (snap.runs.empty()) {
    body += "<p>none yet</p>\n";
  } else {
    size_t jobs = 0, failed = 0;
    const std::string* last_job = nullptr;
    for (const auto& [key, rs] : snap.runs) {  // ordered by job, then run
      if (last_job == nullptr || *last_job != key.training_job) ++jobs;
      last_job = &key.training_job;
      if (!rs.window_failure.empty()) ++failed;
    }
    body += "<p>" + std::to_string(snap.runs.size()) + " runs in " + std::to_string(jobs) +
            " jobs; " + std::to_string(failed) + " with a failed latest window.</p>\n";
  }
  body += "<ul>\n";
  size_t listed = 0;
  for (const auto& [key, rs] : snap.runs) {
    if (listed++ == kLandingMaxListed) {
      body += "<li>... and " + std::to_string(snap.runs.size() - kLandingMaxListed) +
              " more (every run is on /metrics)</li>\n";
      break;
    }
    body += "<li>" + EscapeHtml(key.training_job) + "/" + EscapeHtml(key.run) + ": ";
    body += rs.has_window ? "window " + EscapeHtml(rs.window_id) : std::string("no window yet");
    if (!rs.window_failure.empty()) {
      body += ", latest window failed (" + EscapeHtml(rs.window_failure) + ")";
    }
    body += "</li>\n";
  }
  body += "</ul>\n";
  if (!snap.retention_skipped.empty()) {
    body +=
        "<h2>Runs skipped for retention</h2>\n<p>Quiet longer than --retention: "
        "not analysed, not exported "
        "(profwatch_scan_refused_total{reason=\"retention\"}).</p>\n<ul>\n";
    listed = 0;
    for (const auto& [key, last_activity] : snap.retention_skipped) {
      if (listed++ == kLandingMaxListed) {
        body += "<li>... and " + std::to_string(snap.retention_skipped.size() - kLandingMaxListed) +
                " more</li>\n";
        break;
      }
      body += "<li>" + EscapeHtml(key.training_job) + "/" + EscapeHtml(key.run) +
              ": last activity " + FormatUtc(last_activity) + "</li>\n";
    }
    body += "</ul>\n";
  }
  body += "</body></html>\n";
  return body;
}

// The runbook page: this build's runbook (generated from its docs) under a
// line naming the version, made once.
const std::string& RunbookPage() {
  static const std::string page = [] {
    const expose::BuildInfo build = expose::DefaultBuildInfo();
    return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
           "<title>profwatch alerts runbook</title>\n"
           "<style>body{max-width:60em;margin:auto;padding:0 1em;font-family:sans-serif;"
           "line-height:1.45}code,pre{background:#f4f4f4}pre{padding:.5em;overflow-x:auto}"
           "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .4em}"
           ":target{background:#fff3c4}</style></head><body>\n"
           "<p><a href=\"/\">profwatch</a> " +
           EscapeHtml(build.version) + " (revision " + EscapeHtml(build.revision) +
           "): the alerts' runbook, from docs/alerts-and-dashboards.md of this build. "
           "Other documents it names are in the profwatch docs (installed with it, "
           "under share/doc/profwatch/docs).</p>\n" +
           std::string(RunbookHtml()) + "</body></html>\n";
  }();
  return page;
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
    // Every worker stuck: nothing can be analysed. One stuck worker (or a
    // queue one owner floods) leaves the others serving: not a reason to
    // take the instance out of service.
    if (snap.workers_stuck > 0 && snap.workers_stuck >= snap.workers) {
      return HttpAnswer{503, "text/plain; charset=utf-8",
                        "not ready: all " + std::to_string(snap.workers_stuck) +
                            " analysis worker(s) busy on one window longer than its time budget "
                            "(--window-max-seconds)\n"};
    }
    // A daemon that cannot save its state loses every run at its next
    // restart: not ready until a save succeeds again.
    if (!snap.state_save_error.empty()) {
      return HttpAnswer{
          503, "text/plain; charset=utf-8",
          "not ready: the last save of --state failed: " + snap.state_save_error + "\n"};
    }
    return HttpAnswer{200, "text/plain; charset=utf-8", "OK\n"};
  }
  if (uri == "/")
    return HttpAnswer{200, "text/html; charset=utf-8", LandingPage(snap, landing_note)};
  if (uri == "/runbook" || uri == "/runbook/alerts-and-dashboards.md") {
    // Fixed for the binary's life: a browser may keep it an hour (an
    // upgraded daemon's runbook shows within that).
    return HttpAnswer{200, "text/html; charset=utf-8", RunbookPage(), "max-age=3600"};
  }
  return std::nullopt;
}

void ConnectionAccepted(int fd, const sockaddr* peer, socklen_t peer_len) {
  const HttpServer* server = g_accepting.load();
  if (server == nullptr || peer == nullptr) return;
  auto accepted = Peer(fd, peer, peer_len);
  if (!accepted) return;
  if (auto shed = server->pending().Add(*accepted)) Cut(*shed);
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
  server->pending_ = std::make_unique<PendingConnections>(kMaxPending);
  g_accepting.store(server.get());
  try {
    // Each connection holds a civetweb worker until its request is read, so
    // idle or slow clients (port scanners, half-open health checks) must
    // neither outnumber the workers nor hold one for long.
    server->civet_ = std::make_unique<CivetServer>(
        std::vector<std::string>{"listening_ports", door->tls() ? listen + "s" : listen,
                                 "num_threads", std::to_string(kHttpWorkers), "request_timeout_ms",
                                 std::to_string(kRequestTimeoutMs), "listen_backlog",
                                 std::to_string(kListenBacklog)},
        &Callbacks(), server.get());
  } catch (const std::exception&) {
    g_accepting.store(nullptr);
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
  civet_.reset();  // stops the HTTP threads before the server goes
  const HttpServer* self = this;
  g_accepting.compare_exchange_strong(self, nullptr);
}

std::vector<int> HttpServer::ListeningPorts() const { return civet_->getListeningPorts(); }

}  // namespace profwatch::web
