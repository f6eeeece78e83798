// Daemon options for the tests that drive a Daemon on an injected clock:
// polling (no inotify) every 100 ms of that clock, windows complete as soon
// as they are seen (no settle time), one parse thread.
#pragma once

#include <chrono>
#include <string>

#include "pipeline/daemon.h"

namespace profwatch::pipeline {

inline DaemonOptions FakeClockDaemonOptions(const std::string& jobs) {
  DaemonOptions o;
  o.roots = {jobs};
  o.use_inotify = false;
  o.poll_interval = std::chrono::milliseconds(100);
  o.assembler.settle = std::chrono::milliseconds(0);
  o.analyze.threads = 1;
  return o;
}

}  // namespace profwatch::pipeline
