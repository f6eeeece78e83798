#include "testing/serve_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <thread>

namespace profwatch::testing {

using namespace std::chrono_literals;

std::optional<std::string> HttpGet(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return std::nullopt;
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return std::nullopt;
  }
  std::string resp;
  char buf[65536];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    resp.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  size_t body = resp.find("\r\n\r\n");
  if (resp.rfind("HTTP/1.", 0) != 0 || body == std::string::npos) return std::nullopt;
  if (resp.find(" 200 ") == std::string::npos) return std::nullopt;
  return resp.substr(body + 4);
}

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::optional<double> Sample(const std::string& text, const std::string& name, const Labels& want) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.compare(0, name.size(), name) != 0) continue;
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != '{' && next != ' ') continue;
    bool ok = true;
    for (const auto& [k, v] : want) {
      if (line.find(k + "=\"" + v + "\"") == std::string::npos) ok = false;
    }
    if (ok) return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return std::nullopt;
}

std::optional<double> WindowShown(const std::string& text, const std::string& ts,
                                  const Labels& want) {
  std::tm tm{};
  if (strptime(ts.c_str(), "%Y_%m_%d_%H_%M_%S", &tm) == nullptr) return std::nullopt;
  const double start = static_cast<double>(timegm(&tm));
  const std::string name = "profwatch_window_start_timestamp_seconds";
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, name.size() + 1, name + "{") != 0) continue;
    bool ok = true;
    for (const auto& [k, v] : want) {
      if (line.find(k + "=\"" + v + "\"") == std::string::npos) ok = false;
    }
    if (ok && std::stod(line.substr(line.rfind(' ') + 1)) == start) return 1.0;
  }
  return std::nullopt;
}

std::string ProfileDir(const std::string& jobs, const std::string& job, const std::string& run) {
  return jobs + "/" + job + "/" + run + "/tensorboard/plugins/profile";
}

std::string SmallJaxTrace(int gpus) {
  std::ostringstream out;
  out << R"j({"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[)j";
  for (int g = 0; g < gpus; ++g) {
    out << R"j({"ph":"M","pid":)j" << g + 1
        << R"j(,"name":"process_name","args":{"name":"/device:GPU:)j" << g << R"j("}},)j";
    out << R"j({"ph":"M","pid":)j" << g + 1
        << R"j(,"tid":16,"name":"thread_name","args":{"name":"Stream #16(Kernel)"}},)j";
    for (int k = 0; k < 4; ++k) {
      out << R"j({"ph":"X","pid":)j" << g + 1 << R"j(,"tid":16,"ts":)j" << 10 + k * 101
          << R"j(,"dur":100,"name":"Cijk_Alik_Bljk_HHS_BH_MT128x128x64_gemm","args":{}},)j";
    }
  }
  out << "{}]}";
  return out.str();
}

void WriteSmallJaxTrace(const std::string& path, int gpus) {
  WriteFile(path, Gzip(SmallJaxTrace(gpus)));
}

Serve::Serve(const TempDir& tmp, std::vector<std::string> args, const std::string& tag)
    : log_path_(tmp.Sub(tag + ".log")), port_file_(tmp.Sub(tag + ".port")) {
  std::error_code ec;
  std::filesystem::remove(port_file_, ec);
  // A test that gives --listen itself knows the port and does not wait
  // for the daemon to announce it.
  const auto given = std::find(args.begin(), args.end(), "--listen");
  const bool listen_given = given != args.end() && std::next(given) != args.end();
  std::vector<std::string> argv = {BinaryPath("profwatch"), "serve", "--log-level", "debug"};
  if (!listen_given) {
    argv.insert(argv.end(), {"--listen", "127.0.0.1:0", "--listen-port-file", port_file_});
  }
  argv.insert(argv.end(), args.begin(), args.end());
  pid_ = fork();
  if (pid_ == 0) {
    int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  if (listen_given) {
    port_ = std::stoi(std::next(given)->substr(std::next(given)->rfind(':') + 1));
    return;
  }
  // A bound for a daemon that never listens (see WaitFor's).
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string text = ReadFile(port_file_);
    if (!text.empty()) {
      port_ = std::stoi(text);
      break;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
}

Serve::~Serve() {
  if (pid_ > 0) Stop();
}

std::string Serve::Log() const { return ReadFile(log_path_); }

std::optional<std::string> Serve::Metrics() const {
  if (port_ <= 0) return std::nullopt;
  return HttpGet(port_, "/metrics");
}

std::optional<std::string> Serve::WaitFor(const std::function<bool(const std::string&)>& pred,
                                          std::chrono::milliseconds limit) const {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto m = Metrics(); m && pred(*m)) return m;
    std::this_thread::sleep_for(50ms);
  }
  return std::nullopt;
}

bool Serve::WaitForLog(const std::string& text, std::chrono::milliseconds limit) const {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (Log().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

std::optional<std::string> Serve::MetricsAfterScans(int n) const {
  if (!WaitScans(n)) return std::nullopt;
  return Metrics();
}

bool Serve::WaitScans(int n) const {
  auto first = Metrics();
  if (!first) return false;
  // profwatch_scans_total counts a scan once its whole tick (training logs,
  // dispatch, the publish) is done; the last scan's timestamp can be
  // published by a worker before that.
  const double want = Sample(*first, "profwatch_scans_total").value_or(0) + n;
  return WaitFor([&](const std::string& t) {
           return Sample(t, "profwatch_scans_total").value_or(0) >= want;
         })
      .has_value();
}

void Serve::Signal(int sig) const {
  if (pid_ > 0) kill(pid_, sig);
}

int Serve::Stop(std::chrono::milliseconds limit) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    std::this_thread::sleep_for(20ms);
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return -1;
}

}  // namespace profwatch::testing
