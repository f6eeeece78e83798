// Feeds names made of arbitrary bytes (invalid UTF-8, control characters,
// NULs) through every renderer (issue 47): the JSON report, the table, the
// metrics exposition, the --state and --history JSON, and the text and
// JSON log lines. None may crash or throw, and each must stay well-formed:
//   - JSON (report, state, history line, JSON log members): strict parse
//     (nlohmann rejects invalid UTF-8); the state reads back;
//   - the table: valid UTF-8, no control byte but '\n', and as many lines
//     as with plain names (a name cannot add a row);
//   - the exposition: valid UTF-8, every line a comment or a sample
//     whose label values are quoted with only \\, \" and \n escapes (the
//     text format; other control bytes are legal inside a label value);
//   - the text log line: valid UTF-8 without control bytes.
// The input is cut into kNames equal slices, one per name (job, run,
// window, kernel, family, device, file, region, ...), so every slice
// boundary is reachable.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/log.h"
#include "core/text.h"
#include "expose/report.h"
#include "expose/snapshot_collectable.h"
#include "store/history.h"
#include "store/state_json.h"
#include "testing/sample_snapshot.h"

namespace {

using namespace profwatch;

constexpr size_t kNames = 12;

// The sample run with every name replaced by one of `n`.
snapshot::RunState Named(const std::vector<std::string>& n) {
  snapshot::RunState r = testing::RunWithEverything();
  r.key = {n[0], n[1]};
  r.window_id = n[2];
  r.window_failure = n[11];
  aggregate::WindowStats& st = r.MutableStats();
  st.timestamp_dirs = {n[2]};
  st.files.at(0).path = n[6];
  for (aggregate::FamilySummary& f : st.families) {
    for (aggregate::KernelSummary& k : f.top_kernels) k.name = n[3];
  }
  st.families.at(0).family = n[4];
  for (aggregate::DeviceSummary& d : st.devices) {
    d.file = n[6];
    d.device = n[5];
  }
  for (aggregate::SerialKernel& k : st.serial_kernels) k.name = n[3];
  for (aggregate::RankedKernel& k : st.top_exclusive) {
    k.name = n[3];
    k.family = n[4];
  }
  st.regions.at(0).region = n[7];
  st.flops.device_name = n[8];
  st.flops.families.at(0).family = n[4];
  st.collectives[aggregate::CollectiveKind::kAllReduce].process_groups = {
      {aggregate::MakeProcessGroup(n[9], n[10])}};
  snapshot::RefreshFigures(r);
  return r;
}

bool NoControlBytes(std::string_view s, bool newline_ok) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && !(newline_ok && c == '\n')) || u == 0x7f) return false;
  }
  return true;
}

bool IsValidUtf8(std::string_view s) { return ValidUtf8(s) == s; }

bool StrictJson(const std::string& s) {
  return !nlohmann::json::parse(s, nullptr, false).is_discarded();
}

bool IsNameChar(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}

// Reads a metric or label name at the front of `s`.
bool TakeName(std::string_view& s) {
  size_t n = 0;
  while (n < s.size() && IsNameChar(s[n], n == 0)) ++n;
  s.remove_prefix(n);
  return n > 0;
}

// One sample line of the text exposition format: name, optional
// {label="value",...} (a value's '"', '\\' and newline escaped), a space,
// then a value without spaces or control bytes.
bool IsSampleLine(std::string_view s) {
  if (!TakeName(s)) return false;
  if (!s.empty() && s.front() == '{') {
    s.remove_prefix(1);
    while (!s.empty() && s.front() != '}') {
      if (!TakeName(s) || s.substr(0, 2) != "=\"") return false;
      s.remove_prefix(2);
      while (!s.empty() && s.front() != '"') {
        if (s.front() == '\n') return false;
        if (s.front() == '\\') {
          if (s.size() < 2 || (s[1] != '\\' && s[1] != '"' && s[1] != 'n')) return false;
          s.remove_prefix(1);
        }
        s.remove_prefix(1);
      }
      if (s.empty()) return false;
      s.remove_prefix(1);  // the closing quote
      if (!s.empty() && s.front() == ',') s.remove_prefix(1);
    }
    if (s.empty()) return false;
    s.remove_prefix(1);  // '}'
  }
  if (s.empty() || s.front() != ' ') return false;
  s.remove_prefix(1);
  return !s.empty() && s.find(' ') == std::string_view::npos && NoControlBytes(s, false);
}

size_t Lines(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> names, plain;
  for (size_t i = 0; i < kNames; ++i) {
    names.emplace_back(
        input.substr(i * size / kNames, (i + 1) * size / kNames - i * size / kNames));
    plain.push_back("n" + std::to_string(i));
  }
  const snapshot::RunState rs = Named(names);
  expose::ReportContext ctx;
  ctx.window = names[2];
  ctx.errors = {{names[6], "corrupt", names[11]}};

  // The JSON report, alone and as a history line's report.
  {
    auto s = expose::JsonText(expose::WindowToJson(*rs.figures, ctx));
    if (getenv("DUMPJ")) {
      FILE* f = fopen(getenv("DUMPJ"), "w");
      fwrite(s.data(), 1, s.size(), f);
      fclose(f);
    }
    Check(StrictJson(s));
  }
  const std::string history = store::HistoryLine(rs, 1795000000, expose::RunReportToJson(rs));
  Check(StrictJson(history));
  Check(history.find('\n') == std::string::npos);

  // The table: one row stays one line.
  const std::string table = expose::RenderTable(*rs.figures, ctx);
  Check(IsValidUtf8(table));
  Check(NoControlBytes(table, /*newline_ok=*/true));
  expose::ReportContext plain_ctx = ctx;
  plain_ctx.window = plain[2];
  plain_ctx.errors = {{plain[6], "corrupt", plain[11]}};
  Check(Lines(table) == Lines(expose::RenderTable(*Named(plain).figures, plain_ctx)));

  // The exposition and the --state file.
  snapshot::Snapshot snap;
  snap.runs[rs.key] = rs;
  snap.watch_roots[names[6]] = true;
  snap.last_scan_unix = 1795000000;
  const std::string text = expose::RenderSnapshotText(snap, {names[8], names[9]});
  Check(IsValidUtf8(text));
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    const std::string_view line(text.data() + start,
                                (end == std::string::npos ? text.size() : end) - start);
    Check(line.starts_with("# ") ? NoControlBytes(line, false)
                                 : line.starts_with("profwatch_") && IsSampleLine(line));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  const std::string state = store::SerializeState(snap);
  Check(StrictJson(state));
  // Names come back with their exact bytes (core/text.h ReversibleUtf8).
  auto back = store::ParseState(state);
  Check(back.has_value() && back->runs.count(rs.key) == 1);

  // Log lines, as core/log.cc's formatters write them.
  const std::vector<LogField> fields = {
      {"training_job", names[0]}, {"run", names[1]}, {"path", names[6]}, {"warning", names[11]}};
  const std::string text_line = LogfmtLine("training log found", fields);
  Check(IsValidUtf8(text_line) && NoControlBytes(text_line, false));
  Check(StrictJson("{" + JsonLogMembers("training log found", fields) + "}"));
  return 0;
}
