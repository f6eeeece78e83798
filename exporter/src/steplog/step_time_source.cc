#include "steplog/step_time_source.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <utility>

namespace profwatch::steplog {
namespace {

// MaxText prints the profiler as a plain string ("xplane", "") or, with typed
// configs, as an enum ("ProfilerType.XPLANE"); quotes appear in some dumps.
std::string NormalizeProfiler(std::string_view v) {
  while (!v.empty() && (v.front() == '\'' || v.front() == '"')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == '\'' || v.back() == '"')) v.remove_suffix(1);
  size_t dot = v.rfind('.');
  if (dot != std::string_view::npos) v.remove_prefix(dot + 1);
  std::string out(v);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool ProfilerIsOn(std::string_view normalized) {
  return !(normalized.empty() || normalized == "none" || normalized == "false" ||
           normalized == "0" || normalized == "off");
}

std::optional<int64_t> ParseInt(std::string_view v) {
  if (!v.empty() && v.front() == '+') v.remove_prefix(1);
  int64_t out = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || ptr != v.data() + v.size() || v.empty()) return std::nullopt;
  return out;
}

// Floor modulo (Python's %), which MaxText's periodic test relies on.
int64_t FloorMod(int64_t a, int64_t b) {
  int64_t m = a % b;
  return m < 0 ? m + b : m;
}

int64_t FloorDiv(int64_t a, int64_t b) { return (a - FloorMod(a, b)) / b; }

std::string ShowOpt(const std::optional<int64_t>& v) {
  return v ? std::to_string(*v) : std::string("unset");
}

}  // namespace

std::string_view StepKindName(StepKind kind) {
  switch (kind) {
    case StepKind::kWarmup:
      return "warmup";
    case StepKind::kProfiled:
      return "profiled";
    case StepKind::kWriteBack:
      return "write_back";
    case StepKind::kSteady:
      return "steady";
  }
  return "steady";
}

StepTimeSource::StepTimeSource(const Clock& clock, StepTimeOptions options)
    : clock_(clock), options_(std::move(options)) {
  options_.steady_window = std::max<size_t>(options_.steady_window, 1);
  options_.max_retained_steps = std::max(options_.max_retained_steps, options_.steady_window + 2);
  options_.min_warmup_steps = std::clamp<int64_t>(options_.min_warmup_steps, 0, kMaxConfigInt);
  // Flag values get the same range as log values.
  for (std::optional<int64_t>* v :
       {&options_.overrides.skip_first_n_steps, &options_.overrides.profiler_steps,
        &options_.overrides.period}) {
    if (*v && (**v > kMaxConfigInt || **v < -kMaxConfigInt)) {
      Warn("profile flag value " + std::to_string(**v) + " is out of range; ignored");
      v->reset();
    }
  }
  CheckMismatches();
}

void StepTimeSource::Warn(std::string message) {
  if (warnings_.size() >= kMaxWarnings || !warned_.insert(message).second) return;
  if (line_number_ > 0) message = "line " + std::to_string(line_number_) + ": " + message;
  warnings_.push_back(std::move(message));
}

void StepTimeSource::AddLine(std::string_view line, std::optional<TimePoint> written,
                             uint64_t line_number) {
  line_number_ = line_number;
  if (LooksLikeStepLine(line)) {
    if (std::optional<StepLine> step = ParseStepLine(line)) {
      AddStepLine(*step, written);
    } else {
      ++parse_errors_;
    }
    return;
  }
  if (std::optional<ConfigParam> param = ParseConfigParamLine(line)) AddConfigParam(*param);
}

void StepTimeSource::AddConfigParam(const ConfigParam& param) {
  const std::string& name = param.name;
  bool relevant = name == "profiler" || name == "skip_first_n_steps_for_profiler" ||
                  name == "profiler_steps" || name == "profile_periodically_period" ||
                  name == "enable_profiler";
  // Any config line after step lines means the job started again (MaxText
  // dumps its whole config at start), even if this param is not one we use.
  if (steps_seen_in_segment_) {
    steps_.clear();
    start_step_.reset();
    steps_seen_in_segment_ = false;
    ++segment_;
  }
  config_seen_in_segment_ = true;
  if (!relevant) return;

  if (name == "profiler") {
    log_config_.profiler = NormalizeProfiler(param.value);
  } else if (name == "enable_profiler") {
    std::string v = NormalizeProfiler(param.value);
    legacy_enable_profiler_ = v == "true" || v == "1";
  } else {
    std::optional<int64_t> v = ParseInt(param.value);
    // `name` is one of the fixed names above; the value is not quoted.
    if (v && (*v > kMaxConfigInt || *v < -kMaxConfigInt)) {
      Warn("config param " + name + " is out of range (beyond +-1e12); ignored");
      return;
    }
    if (!v) {
      Warn("config param " + name + " is not an integer; ignored");
      return;
    }
    if (name == "skip_first_n_steps_for_profiler") log_config_.skip_first_n_steps = *v;
    if (name == "profiler_steps") log_config_.profiler_steps = *v;
    if (name == "profile_periodically_period") log_config_.period = *v;
  }
  CheckMismatches();
}

void StepTimeSource::CheckMismatches() {
  const ProfileConfig& o = options_.overrides;
  const ProfileConfig& l = log_config_;
  auto check = [&](const char* flag, const char* param, const std::optional<int64_t>& fv,
                   const std::optional<int64_t>& lv) {
    if (fv && lv && *fv != *lv) {
      Warn(std::string("profile config mismatch: flag ") + flag + "=" + ShowOpt(fv) + ", log " +
           param + "=" + ShowOpt(lv) + " (using the flag)");
    }
  };
  check("skip_first_n_steps", "skip_first_n_steps_for_profiler", o.skip_first_n_steps,
        l.skip_first_n_steps);
  check("profile_steps", "profiler_steps", o.profiler_steps, l.profiler_steps);
  check("profile_period", "profile_periodically_period", o.period, l.period);
  if (l.profiler) {
    bool log_on = ProfilerIsOn(*l.profiler);
    if (o.profiler && NormalizeProfiler(*o.profiler) != *l.profiler) {
      Warn("profile config mismatch: flag profiler=" + *o.profiler +
           " differs from the log's profiler (using the flag)");
    } else if (!o.profiler && !log_on && (o.profiler_steps || o.skip_first_n_steps)) {
      Warn(
          "profile config mismatch: flags give a profile window but the log says the "
          "profiler is off (using the flags)");
    }
  }
}

ProfileConfig StepTimeSource::profile_config() const {
  ProfileConfig c = log_config_;
  const ProfileConfig& o = options_.overrides;
  if (o.profiler) c.profiler = NormalizeProfiler(*o.profiler);
  if (o.skip_first_n_steps) c.skip_first_n_steps = o.skip_first_n_steps;
  if (o.profiler_steps) c.profiler_steps = o.profiler_steps;
  if (o.period) c.period = o.period;
  return c;
}

bool StepTimeSource::profiling_enabled() const {
  const ProfileConfig& o = options_.overrides;
  if (o.profiler) return ProfilerIsOn(NormalizeProfiler(*o.profiler));
  // Flags that describe a window mean the user knows there is one.
  if (o.profiler_steps || o.skip_first_n_steps) return true;
  if (log_config_.profiler) return ProfilerIsOn(*log_config_.profiler);
  return legacy_enable_profiler_;
}

std::optional<int64_t> StepTimeSource::first_profiled_step() const {
  if (!profiling_enabled()) return std::nullopt;
  ProfileConfig c = profile_config();
  if (!c.skip_first_n_steps || !c.profiler_steps || *c.profiler_steps <= 0) return std::nullopt;
  return run_start_step() + std::max<int64_t>(*c.skip_first_n_steps, 0);
}

std::optional<int64_t> StepTimeSource::profile_steps() const {
  if (!first_profiled_step()) return std::nullopt;
  return profile_config().profiler_steps;
}

StepKind StepTimeSource::Classify(int64_t step) const {
  const int64_t start = run_start_step();
  std::optional<int64_t> first = first_profiled_step();
  int64_t warmup_end = start + options_.min_warmup_steps;
  if (first) warmup_end = std::max(warmup_end, *first);
  if (step < warmup_end) return StepKind::kWarmup;
  if (!first) return StepKind::kSteady;
  const int64_t steps = *profile_steps();
  const int64_t period = profile_config().period.value_or(0);
  const int64_t d = step - *first;
  if (period <= 0) {
    if (d >= 0 && d < steps) return StepKind::kProfiled;
    if (d == steps) return StepKind::kWriteBack;
    return StepKind::kSteady;
  }
  const int64_t m = FloorMod(d, period);
  if (m < steps && step - m >= start) return StepKind::kProfiled;
  if (m == steps && step - m >= start) return StepKind::kWriteBack;
  return StepKind::kSteady;
}

std::vector<StepRange> StepTimeSource::ProfiledRanges(int64_t through_step) const {
  std::vector<StepRange> out;
  std::optional<int64_t> first = first_profiled_step();
  if (!first) return out;
  const int64_t steps = *profile_steps();
  const int64_t period = profile_config().period.value_or(0);
  if (period <= 0) {
    if (*first <= through_step) out.push_back({*first, *first + steps - 1});
    return out;
  }
  // Smallest k with first + k*period >= start.
  int64_t k = -FloorDiv(*first - run_start_step(), period);
  for (; out.size() < kMaxProfiledRanges; ++k) {
    int64_t s = *first + k * period;
    if (s > through_step) break;
    out.push_back({s, s + steps - 1});
  }
  return out;
}

void StepTimeSource::AddStepLine(const StepLine& line, std::optional<TimePoint> written) {
  if (line.step < 0 || line.step > kMaxStepNumber || !std::isfinite(line.seconds) ||
      line.seconds < 0) {
    ++parse_errors_;  // only reachable by callers that build StepLines themselves
    return;
  }
  ++step_lines_;
  // Training restarted from an earlier checkpoint without a new config dump
  // (or the log was truncated and rewritten): the series start again, so the
  // step gauges follow the new run instead of freezing at the old highest
  // step. Nodes of one job may report a step a little out of order; that is
  // not a restart.
  if (!steps_.empty() && line.step + kRestartBackSteps < steps_.rbegin()->first) {
    steps_.clear();
    last_step_time_.reset();
    steps_seen_in_segment_ = false;
    config_seen_in_segment_ = true;  // the new segment starts at this step
    ++restarts_;
    ++segment_;
  }
  if (!steps_seen_in_segment_) {
    steps_seen_in_segment_ = true;
    // A config dump precedes a run's first step line; without one the log is
    // read from its middle and the start is unknown (assume a fresh run).
    start_step_ = config_seen_in_segment_ ? line.step : 0;
    config_seen_in_segment_ = false;
  }
  if (!steps_.empty() && steps_.size() >= options_.max_retained_steps &&
      line.step < steps_.begin()->first) {
    return;  // older than everything retained: forgotten already
  }
  Agg& agg = steps_[line.step];
  if (agg.lines == 0) {
    agg.max_seconds = agg.min_seconds = line.seconds;
    agg.slowest = line;
  } else {
    if (line.seconds > agg.max_seconds) {
      agg.max_seconds = line.seconds;
      agg.slowest = line;
    }
    agg.min_seconds = std::min(agg.min_seconds, line.seconds);
  }
  ++agg.lines;
  if (line.step == steps_.rbegin()->first) {
    const TimePoint now = clock_.Now();
    last_step_time_ = written ? std::min(*written, now) : now;
  }
  while (steps_.size() > options_.max_retained_steps) steps_.erase(steps_.begin());
}

std::optional<int64_t> StepTimeSource::last_step() const {
  if (steps_.empty()) return std::nullopt;
  return steps_.rbegin()->first;
}

std::optional<double> StepTimeSource::last_step_seconds() const {
  if (steps_.empty()) return std::nullopt;
  return steps_.rbegin()->second.max_seconds;
}

std::optional<double> StepTimeSource::last_step_spread_seconds() const {
  if (steps_.empty()) return std::nullopt;
  const Agg& a = steps_.rbegin()->second;
  return a.max_seconds - a.min_seconds;
}

std::optional<double> StepTimeSource::tokens_per_second_per_device() const {
  if (steps_.empty()) return std::nullopt;
  return steps_.rbegin()->second.slowest.tokens_per_second_per_device;
}

std::optional<double> StepTimeSource::tflops_per_device() const {
  if (steps_.empty()) return std::nullopt;
  return steps_.rbegin()->second.slowest.tflops_per_device;
}

std::optional<double> StepTimeSource::mfu_ratio() const {
  if (steps_.empty()) return std::nullopt;
  return steps_.rbegin()->second.slowest.mfu_ratio;
}

std::optional<double> StepTimeSource::loss() const {
  if (steps_.empty()) return std::nullopt;
  return steps_.rbegin()->second.slowest.loss;
}

std::optional<TimePoint> StepTimeSource::last_step_time() const {
  if (steps_.empty()) return std::nullopt;
  return last_step_time_;
}

int StepTimeSource::MaxLinesOlder() const {
  int max_lines_older = 0;
  if (steps_.empty()) return 0;
  for (auto it = steps_.begin(); it != std::prev(steps_.end()); ++it) {
    max_lines_older = std::max(max_lines_older, it->second.lines);
  }
  return max_lines_older;
}

std::vector<double> StepTimeSource::SteadySeconds() const {
  std::vector<double> out;
  if (steps_.empty()) return out;
  const int max_lines_older = MaxLinesOlder();
  for (auto it = steps_.rbegin(); it != steps_.rend() && out.size() < options_.steady_window;
       ++it) {
    if (it == steps_.rbegin() && it->second.lines < max_lines_older) continue;
    if (Classify(it->first) != StepKind::kSteady) continue;
    out.push_back(it->second.max_seconds);
  }
  return out;
}

namespace {

std::optional<double> Median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + mid);
  return (lo + hi) / 2;
}

}  // namespace

std::optional<double> StepTimeSource::steady_step_seconds() const {
  return Median(SteadySeconds());
}

std::optional<WindowSteps> StepTimeSource::LatestWindow(const WindowSteps* previous) const {
  if (steps_.empty()) return std::nullopt;
  const int64_t last = steps_.rbegin()->first;
  WindowSteps w;
  w.segment = segment_;
  std::optional<int64_t> first = first_profiled_step();
  if (first && *first <= last) {
    const int64_t steps = *profile_steps();
    const int64_t period = profile_config().period.value_or(0);
    const int64_t start = run_start_step();
    int64_t s = *first;
    if (period > 0) {
      // The latest window start first + k*period at or before `last` (k may
      // be negative: MaxText's modulo test), not before the run's start.
      s = *first + FloorDiv(last - *first, period) * period;
    }
    const bool taken = previous && previous->located && previous->segment == segment_ &&
                       previous->profiled.first == s;
    if (s >= start && !taken) {
      w.located = true;
      w.profiled = {s, s + steps - 1};
      if (period > 0) {
        if (s - period >= start) w.period_first = s - period + steps;
        w.period_end = s + period;
      }
      return w;
    }
  }
  w.profiled = {last, last};
  return w;
}

WindowStepTime StepTimeSource::WindowSteadySeconds(const WindowSteps& window) const {
  WindowStepTime out;
  if (window.segment != segment_) {
    out.settled = true;  // the window's steps went with the old segment
    return out;
  }
  if (steps_.empty()) return out;
  const size_t before_max = window_before_steps();
  const int max_lines_older = MaxLinesOlder();
  const int64_t newest = steps_.rbegin()->first;
  // Complete, steady and inside the window's period.
  auto usable = [&](int64_t step, const Agg& agg) {
    if (step == newest && agg.lines < max_lines_older) return false;
    if (window.period_first && step < *window.period_first) return false;
    if (window.period_end && step >= *window.period_end) return false;
    return Classify(step) == StepKind::kSteady;
  };
  std::vector<double> seconds;
  // Before: the anchor step itself counts when the profiled steps are unknown.
  const int64_t before_end = window.located ? window.profiled.first : window.profiled.last + 1;
  size_t before = 0;
  for (auto it = std::make_reverse_iterator(steps_.lower_bound(before_end));
       it != steps_.rend() && before < before_max; ++it) {
    if (window.period_first && it->first < *window.period_first) break;
    if (!usable(it->first, it->second)) continue;
    seconds.push_back(it->second.max_seconds);
    ++before;
  }
  size_t after = 0;
  for (auto it = steps_.upper_bound(window.profiled.last);
       it != steps_.end() && after < kWindowAfterSteps; ++it) {
    if (window.period_end && it->first >= *window.period_end) break;
    if (!usable(it->first, it->second)) continue;
    seconds.push_back(it->second.max_seconds);
    ++after;
  }
  out.steps = seconds.size();
  out.seconds = Median(std::move(seconds));
  out.settled = after >= kWindowAfterSteps || (window.period_end && newest >= *window.period_end);
  return out;
}

size_t StepTimeSource::steady_step_count() const { return SteadySeconds().size(); }

std::vector<StepRecord> StepTimeSource::Steps() const {
  std::vector<StepRecord> out;
  out.reserve(steps_.size());
  for (const auto& [step, agg] : steps_) {
    StepRecord r;
    r.step = step;
    r.seconds = agg.max_seconds;
    r.spread_seconds = agg.max_seconds - agg.min_seconds;
    r.lines = agg.lines;
    r.kind = Classify(step);
    r.slowest = agg.slowest;
    out.push_back(r);
  }
  return out;
}

}  // namespace profwatch::steplog
