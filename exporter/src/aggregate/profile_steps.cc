// ChooseProfileSteps: see profile_steps.h.
#include "aggregate/profile_steps.h"

#include <algorithm>
#include <map>
#include <set>

namespace profwatch::aggregate {

namespace {

int Clamp(int64_t n) { return static_cast<int>(std::min(n, kMaxProfileSteps)); }

std::string Plural(size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

}  // namespace

std::string_view ProfileStepsSourceName(ProfileStepsSource s) {
  switch (s) {
    case ProfileStepsSource::kFlag:
      return "flag";
    case ProfileStepsSource::kTrace:
      return "trace";
    case ProfileStepsSource::kLog:
      return "log";
    case ProfileStepsSource::kNvtx:
      return "nvtx";
    case ProfileStepsSource::kDefault:
      break;
  }
  return "default";
}

std::optional<ProfileStepsSource> ParseProfileStepsSource(std::string_view name) {
  for (ProfileStepsSource s :
       {ProfileStepsSource::kDefault, ProfileStepsSource::kFlag, ProfileStepsSource::kTrace,
        ProfileStepsSource::kLog, ProfileStepsSource::kNvtx}) {
    if (ProfileStepsSourceName(s) == name) return s;
  }
  return std::nullopt;
}

ProfileStepsChoice ChooseProfileSteps(std::optional<int64_t> flag, std::optional<int64_t> log,
                                      const std::vector<FileSummary>& files,
                                      const std::vector<StepSpan>& steps) {
  ProfileStepsChoice out;
  if (flag && *flag >= 0) {
    out.steps = Clamp(*flag);
    out.source = ProfileStepsSource::kFlag;
    return out;
  }
  size_t kineto = 0;
  for (const FileSummary& f : files) kineto += f.schema == parse::TraceSchema::kKineto;
  std::map<uint32_t, std::set<int64_t>> marked;  // Kineto file -> distinct N
  std::set<int64_t> nvtx;
  for (const StepSpan& s : steps) {
    if (s.step < 0 || s.file >= files.size()) continue;
    const parse::TraceSchema schema = files[s.file].schema;
    if (schema == parse::TraceSchema::kKineto) marked[s.file].insert(s.step);
    if (schema == parse::TraceSchema::kNsys || schema == parse::TraceSchema::kRocprof) {
      nvtx.insert(s.step);
    }
  }
  if (!marked.empty()) {
    std::map<size_t, size_t> files_by_count;  // distinct steps -> files
    for (const auto& [file, numbers] : marked) ++files_by_count[numbers.size()];
    size_t best = 0, best_files = 0;
    for (const auto& [count, n] : files_by_count) {
      if (n >= best_files) {  // ascending counts: a tie goes to the larger
        best = count;
        best_files = n;
      }
    }
    out.steps = Clamp(static_cast<int64_t>(best));
    out.source = ProfileStepsSource::kTrace;
    if (files_by_count.size() > 1 || marked.size() < kineto) {
      out.disagreement = "Kineto files disagree on their ProfilerStep# markers:";
      for (auto it = files_by_count.rbegin(); it != files_by_count.rend(); ++it) {
        out.disagreement += (it == files_by_count.rbegin() ? " " : ", ") +
                            Plural(it->second, "file marks ", "files mark ") +
                            Plural(it->first, "step", "steps");
      }
      if (marked.size() < kineto) {
        out.disagreement +=
            ", " + Plural(kineto - marked.size(), "file marks", "files mark") + " none";
      }
      out.disagreement += "; " + std::to_string(out.steps) + " taken";
    }
    return out;
  }
  if (log && *log >= 1) {
    out.steps = Clamp(*log);
    out.source = ProfileStepsSource::kLog;
    return out;
  }
  if (!nvtx.empty()) {
    out.steps = Clamp(static_cast<int64_t>(nvtx.size()));
    out.source = ProfileStepsSource::kNvtx;
  }
  return out;
}

}  // namespace profwatch::aggregate
