// Harness for integration tests that run the real `profwatch serve` binary:
// starts it on 127.0.0.1 with an ephemeral port (read back from
// --listen-port-file), scrapes /metrics over a plain socket and polls with
// deadlines (never fixed sleeps). Not thread-safe; one owner per daemon.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "testing/test_util.h"

namespace profwatch::testing {

// GET http://127.0.0.1:<port><path>; the body of a 200 answer, else nullopt.
std::optional<std::string> HttpGet(int port, const std::string& path);

// A TCP port on 127.0.0.1 that was free a moment ago (bound to 0 and
// closed), for a test that must reach the daemon before it announces one.
int FreeLoopbackPort();

using Labels = std::map<std::string, std::string>;
// The value of the first sample `name` whose labels include all of `want`.
std::optional<double> Sample(const std::string& text, const std::string& name,
                             const Labels& want = {});

// 1 when some run matching `want` exports the window whose first <ts> dir is
// `ts` ("2024_03_01_12_00_00", by profwatch_window_start_timestamp_seconds:
// the window id is no label), else nullopt.
std::optional<double> WindowShown(const std::string& text, const std::string& ts,
                                  const Labels& want = {});

// `<jobs>/<job>/<run>/tensorboard/plugins/profile` (MaxText layout).
std::string ProfileDir(const std::string& jobs, const std::string& job, const std::string& run);

// A small JAX-format trace: `gpus` devices with four GEMM kernels of 100 us
// each; written gzipped at `path` (parent directories made).
std::string SmallJaxTrace(int gpus);
void WriteSmallJaxTrace(const std::string& path, int gpus);

class Serve {
 public:
  // Starts `profwatch serve --listen 127.0.0.1:0 ... args`; its stdout and
  // stderr go to <tmp>/<tag>.log. Waits (bounded) for the port file, unless
  // `args` give --listen ADDRESS:PORT: then returns at once (port() is
  // PORT; the daemon may not listen yet).
  Serve(const TempDir& tmp, std::vector<std::string> args, const std::string& tag = "serve");
  ~Serve();
  Serve(const Serve&) = delete;
  Serve& operator=(const Serve&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string Log() const;
  std::optional<std::string> Metrics() const;
  // Polls /metrics until `pred` holds; returns the scrape that satisfied it.
  // The default limit bounds a broken daemon, it times nothing: it is set
  // so that the slowest analysis a test waits for (a real trace under ASan
  // beside a concurrent build) needs at most a quarter of it
  // (docs/performance.md, "The two commands' time").
  std::optional<std::string> WaitFor(
      const std::function<bool(const std::string&)>& pred,
      std::chrono::milliseconds limit = std::chrono::seconds(120)) const;
  // Waits until the daemon's log contains `text` (the same kind of bound).
  bool WaitForLog(const std::string& text,
                  std::chrono::milliseconds limit = std::chrono::seconds(40)) const;
  // Waits until the daemon has completed `n` more full scans.
  bool WaitScans(int n) const;
  // The scrape after `n` more full scans: what stays once the daemon has
  // looked again. nullopt when the scans or the scrape do not come.
  std::optional<std::string> MetricsAfterScans(int n) const;
  void Signal(int sig) const;
  // SIGTERM and wait up to `limit`; the exit code (-1 on signal death or
  // when `limit` passed: then SIGKILL).
  int Stop(std::chrono::milliseconds limit = std::chrono::seconds(20));

 private:
  std::string log_path_;
  std::string port_file_;
  pid_t pid_ = -1;
  int port_ = -1;
};

}  // namespace profwatch::testing
