#include "pipeline/scan_events.h"

#include <fmt/format.h>

#include <system_error>

#include "pipeline/window_policy.h"

namespace profwatch::pipeline {

std::vector<LogEvent> ScanNoteEvents(const window::Assembler::ScanNotes& notes,
                                     int windows_at_first_sight) {
  std::vector<LogEvent> logs;
  for (const std::string& dir : notes.future_dirs) {
    Log(logs, LogLevel::kWarn, "profile dir dated in the future skipped",
        {{"path", dir},
         {"stage", "window"},
         {"hint",
          "clock skew or a copied tree; it is analysed once the clock reaches it "
          "(--future-tolerance)"}});
  }
  for (LogEvent& e : SupersededEvents(notes.superseded)) logs.push_back(std::move(e));
  for (const window::Assembler::Backlog& b : notes.backlog) {
    Log(logs, LogLevel::kInfo, "older windows of a run not considered",
        {{"training_job", b.run.training_job},
         {"run", b.run.run},
         {"windows", b.windows},
         {"oldest_considered", b.newest_id},
         {"stage", "window"},
         {"windows_at_first_sight", windows_at_first_sight}});
  }
  for (const window::Assembler::RunClash& c : notes.clashes) {
    Log(logs, LogLevel::kError, "two run dirs have the same labels, the second is not analysed",
        {{"training_job", c.run.training_job},
         {"run", c.run.run},
         {"kept", c.kept_dir},
         {"path", c.skipped_dir},
         {"stage", "window"},
         {"hint", "watch them under roots that give distinct job names"}});
  }
  return logs;
}

std::vector<LogEvent> SkippedEvents(const watch::ScanResult& result,
                                    int64_t& last_permission_errors,
                                    int64_t& last_symlinks_skipped) {
  std::vector<LogEvent> logs;
  if (result.permission_errors != last_permission_errors) {
    if (result.permission_errors > 0) {
      Log(logs, LogLevel::kWarn, "scan skipped unreadable entries",
          {{"count", result.permission_errors},
           {"paths", JoinPaths(result.permission_error_paths)},
           {"stage", "watch"}});
    }
    last_permission_errors = result.permission_errors;
  }
  if (result.symlinks_skipped != last_symlinks_skipped) {
    if (result.symlinks_skipped > 0) {
      Log(logs, LogLevel::kWarn, "scan skipped directory links out of the watch root",
          {{"count", result.symlinks_skipped},
           {"stage", "watch"},
           {"hint", "pass --follow-symlinks to walk them"}});
    }
    last_symlinks_skipped = result.symlinks_skipped;
  }
  return logs;
}

std::vector<LogEvent> RootEvents(const watch::ScanResult& result,
                                 std::map<std::string, watch::RootCondition>& conditions,
                                 std::map<std::string, bool>& readable) {
  std::vector<LogEvent> logs;
  readable.clear();
  for (const watch::RootStatus& root : result.roots) {
    const bool ok = root.condition == watch::RootCondition::kOk;
    readable[root.path] = ok;
    auto before = conditions.find(root.path);
    if (before != conditions.end() && before->second == root.condition) continue;
    if (ok) {
      // Silent on a healthy start; a recovery is worth a line.
      if (before != conditions.end()) {
        Log(logs, LogLevel::kInfo, "watch root readable", {{"path", root.path}});
      }
    } else {
      Log(logs, LogLevel::kWarn,
          fmt::format("watch root {}", watch::RootConditionName(root.condition)),
          {{"path", root.path},
           {"error", std::error_code(root.error, std::generic_category()).message()},
           {"stage", "watch"}});
    }
    conditions[root.path] = root.condition;
  }
  // Roots dropped by a reload leave the exposition.
  std::erase_if(conditions, [&](const auto& kv) { return readable.count(kv.first) == 0; });
  return logs;
}

std::string JoinPaths(const std::vector<std::string>& paths) {
  std::string out;
  for (const auto& s : paths) {
    if (!out.empty()) out += ",";
    out += s;
  }
  return out;
}

}  // namespace profwatch::pipeline
