// Nsight Systems SQLite export reader: see nsys_reader.h.
#include "parse/nsys_reader.h"

#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "parse/sqlite_file.h"

namespace profwatch::parse {

namespace {

constexpr std::string_view kKernelTable = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr std::string_view kNvtxTable = "NVTX_EVENTS";
constexpr std::string_view kMemcpyTable = "CUPTI_ACTIVITY_KIND_MEMCPY";
constexpr std::string_view kMemsetTable = "CUPTI_ACTIVITY_KIND_MEMSET";
constexpr std::string_view kRuntimeTable = "CUPTI_ACTIVITY_KIND_RUNTIME";
// How many earlier ranges of a thread a launch is checked against (NCCL's
// ranges nest at most a few deep: ncclGroupEnd around the calls).
constexpr size_t kNcclNestingChecked = 8;
// The columns every device table (kernels, memcpy, memset) is read by, in
// the order DeviceRow expects them.
constexpr const char* kDeviceColumns[] = {"start", "end", "deviceId", "streamId", "globalPid"};
constexpr std::string_view kDeviceSelect = "SELECT start, end, deviceId, streamId, globalPid";

using sqlite::Statement;

class Reader {
 public:
  Reader(const std::string& path, EventSink& sink, FileBudget* budget, const std::string& open_as)
      : file_(path, open_as, budget), sink_(sink) {}

  Result<ParseSummary> Run() {
    summary_.schema = TraceSchema::kNsys;
    if (auto s = file_.Open("an export", /*charge=*/true); !s) return tl::unexpected(s.error());
    auto kernel_columns = Columns(kKernelTable, /*required=*/true);
    if (!kernel_columns) return tl::unexpected(kernel_columns.error());
    if (kernel_columns->empty()) {
      return MakeError(ErrorCode::kUnsupported,
                       "no " + std::string(kKernelTable) +
                           " table: not an nsys export, or exported without CUDA trace "
                           "(nsys profile --trace=cuda)");
    }
    auto nvtx_columns = Columns(kNvtxTable);
    if (!nvtx_columns) return tl::unexpected(nvtx_columns.error());
    if (!nvtx_columns->empty()) {
      if (auto s = ReadNvtx(*nvtx_columns); !s) return tl::unexpected(s.error());
    }
    if (!nccl_ranges_.empty()) {
      if (auto s = ReadNcclLaunches(); !s) return tl::unexpected(s.error());
    }
    if (auto s = ReadKernels(*kernel_columns); !s) return tl::unexpected(s.error());
    for (const auto& [table, name] :
         {std::pair{kMemcpyTable, "Memcpy"}, {kMemsetTable, "Memset"}}) {
      if (auto s = ReadMemops(table, name); !s) return tl::unexpected(s.error());
    }
    return summary_;
  }

 private:
  // The column names of `table`; empty when there is no such table.
  // Anything of that name that is not a table (a view, say) is kUnsupported
  // when the table is `required`, and treated as absent otherwise.
  Result<std::set<std::string>> Columns(std::string_view table, bool required = false) {
    auto kind = KindOf(table);
    if (!kind) return tl::unexpected(kind.error());
    if (kind->empty()) return std::set<std::string>{};
    if (*kind != "table") {
      if (!required) return std::set<std::string>{};
      return MakeError(ErrorCode::kUnsupported,
                       std::string(table) + " is a " + *kind +
                           ", not a table: not an nsys export (only tables are read)");
    }
    auto stmt = file_.Prepare("SELECT name FROM pragma_table_info('" + std::string(table) + "')");
    if (!stmt) return tl::unexpected(stmt.error());
    std::set<std::string> out;
    int rc;
    while ((rc = sqlite3_step(stmt->stmt)) == SQLITE_ROW) {
      const auto* text = sqlite3_column_text(stmt->stmt, 0);
      if (text != nullptr) out.emplace(reinterpret_cast<const char*>(text));
    }
    if (rc != SQLITE_DONE) return file_.Fail(rc, "reading the schema of " + std::string(table));
    return out;
  }

  // What sqlite_master says `name` is ("table", "view", ...; the first
  // entry by that name, any case); empty when nothing has the name.
  Result<std::string> KindOf(std::string_view name) {
    auto stmt = file_.Prepare(
        "SELECT type FROM sqlite_master WHERE name = ?1 COLLATE NOCASE "
        "ORDER BY type <> 'table' LIMIT 1");
    if (!stmt) return tl::unexpected(stmt.error());
    sqlite3_bind_text(stmt->stmt, 1, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
    const int rc = sqlite3_step(stmt->stmt);
    if (rc == SQLITE_DONE) return std::string();
    if (rc != SQLITE_ROW) return file_.Fail(rc, "reading the schema");
    const auto* text = sqlite3_column_text(stmt->stmt, 0);
    return text == nullptr ? std::string("?") : std::string(reinterpret_cast<const char*>(text));
  }

  // The text of a StringIds id, looked up once per id.
  Result<const std::string*> StringOf(int64_t id) {
    auto it = strings_.find(id);
    if (it != strings_.end()) return &it->second;
    if (string_stmt_.stmt == nullptr) {
      auto kind = KindOf("StringIds");
      if (!kind) return tl::unexpected(kind.error());
      if (*kind != "table") {
        return MakeError(ErrorCode::kUnsupported,
                         "StringIds is " + (kind->empty() ? "missing" : "a " + *kind) +
                             ", not a table: not an nsys export (only tables are read)");
      }
      auto s = file_.Prepare("SELECT value FROM StringIds WHERE id = ?");
      if (!s) return tl::unexpected(s.error());
      string_stmt_ = std::move(*s);
    }
    sqlite3_stmt* st = string_stmt_.stmt;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, id);
    std::string value;
    const int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      const auto* text = sqlite3_column_text(st, 0);
      if (text != nullptr) value = reinterpret_cast<const char*>(text);
    } else if (rc != SQLITE_DONE) {
      return file_.Fail(rc, "reading StringIds");
    }
    return &strings_.emplace(id, std::move(value)).first->second;
  }

  Status ReadNvtx(const std::set<std::string>& cols) {
    for (const char* need : {"start", "end", "globalTid"}) {
      if (!cols.contains(need)) return {};  // ranks and steps are optional
    }
    const std::string text = cols.contains("text") ? "text" : "NULL";
    const std::string text_id = cols.contains("textId") ? "textId" : "NULL";
    auto stmt = file_.Prepare("SELECT start, end, globalTid, " + text + ", " + text_id + " FROM " +
                              std::string(kNvtxTable));
    if (!stmt) return tl::unexpected(stmt.error());
    sqlite3_stmt* st = stmt->stmt;
    std::map<int64_t, std::pair<int64_t, int64_t>> rank_at;  // pid -> (start, rank)
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (sqlite3_column_type(st, 0) == SQLITE_NULL || sqlite3_column_type(st, 2) == SQLITE_NULL)
        continue;
      const int64_t start = sqlite3_column_int64(st, 0);
      if (start < 0) continue;
      std::string_view label;
      if (sqlite3_column_type(st, 3) != SQLITE_NULL) {
        label = {reinterpret_cast<const char*>(sqlite3_column_text(st, 3)),
                 static_cast<size_t>(sqlite3_column_bytes(st, 3))};
      } else if (sqlite3_column_type(st, 4) != SQLITE_NULL) {
        auto s = StringOf(sqlite3_column_int64(st, 4));
        if (!s) return tl::unexpected(s.error());
        label = **s;
      }
      if (label.empty()) continue;
      const int64_t pid = ProcessOfGlobalId(sqlite3_column_int64(st, 2));
      if (label.starts_with("nccl")) {  // NCCL's own range: ncclAllReduce, ...
        if (sqlite3_column_type(st, 1) != SQLITE_NULL) {
          AddNcclRange(sqlite3_column_int64(st, 2), start, sqlite3_column_int64(st, 1), label);
        }
        continue;
      }
      if (auto rank = RankOfNvtxText(label)) {
        auto [it, added] = rank_at.try_emplace(pid, start, *rank);
        if (!added && start < it->second.first) it->second = {start, *rank};
        continue;
      }
      auto step = StepOfNvtxText(label);
      if (!step || sqlite3_column_type(st, 1) == SQLITE_NULL) continue;
      const int64_t end = sqlite3_column_int64(st, 1);
      const std::string name = std::to_string(*step);
      TraceEvent e;
      e.ph = 'X';
      e.cat = kNsysStepCat;
      e.name = name;
      e.has_name = true;
      e.pid = Id{IdKind::kInt, pid, {}};
      Times(start, end, e);
      ++summary_.events;
      sink_.OnEvent(e);
    }
    if (rc != SQLITE_DONE) return file_.Fail(rc, "reading " + std::string(kNvtxTable));
    for (const auto& [pid, at] : rank_at) summary_.process_ranks[pid] = at.second;
    return {};
  }

  void AddNcclRange(int64_t global_tid, int64_t start, int64_t end, std::string_view label) {
    if (nccl_range_count_ >= kMaxNcclRanges) {
      ++summary_.drops["nccl_range_limit"];
      return;
    }
    ++nccl_range_count_;
    auto [it, added] = nccl_name_of_.try_emplace(std::string(label), nccl_names_.size());
    if (added) nccl_names_.push_back(it->first);
    nccl_ranges_[global_tid].push_back({start, end, static_cast<uint32_t>(it->second)});
  }

  // The launches (CUPTI_ACTIVITY_KIND_RUNTIME rows) made inside an NCCL
  // range of their thread, by (process, correlationId): the innermost
  // range's name, for the kernel of that correlation.
  Status ReadNcclLaunches() {
    for (auto& [tid, ranges] : nccl_ranges_) {
      std::sort(ranges.begin(), ranges.end(),
                [](const NcclRange& a, const NcclRange& b) { return a.start < b.start; });
    }
    auto cols = Columns(kRuntimeTable);
    if (!cols) return tl::unexpected(cols.error());
    for (const char* need : {"start", "globalTid", "correlationId"}) {
      if (!cols->contains(need)) return {};
    }
    auto stmt =
        file_.Prepare("SELECT start, globalTid, correlationId FROM " + std::string(kRuntimeTable));
    if (!stmt) return tl::unexpected(stmt.error());
    sqlite3_stmt* st = stmt->stmt;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (sqlite3_column_type(st, 0) == SQLITE_NULL || sqlite3_column_type(st, 1) == SQLITE_NULL ||
          sqlite3_column_type(st, 2) == SQLITE_NULL) {
        continue;
      }
      const int64_t tid = sqlite3_column_int64(st, 1);
      auto r = nccl_ranges_.find(tid);
      if (r == nccl_ranges_.end()) continue;
      const int64_t at = sqlite3_column_int64(st, 0);
      const auto& ranges = r->second;
      auto it = std::upper_bound(ranges.begin(), ranges.end(), at,
                                 [](int64_t t, const NcclRange& x) { return t < x.start; });
      for (size_t n = 0; it != ranges.begin() && n < kNcclNestingChecked; ++n) {
        --it;
        if (it->end < at) continue;
        if (nccl_launches_.size() >= kMaxNcclLaunches) {
          ++summary_.drops["nccl_launch_limit"];
        } else {
          nccl_launches_[{ProcessOfGlobalId(tid), sqlite3_column_int64(st, 2)}] = it->name;
        }
        break;
      }
    }
    if (rc != SQLITE_DONE) return file_.Fail(rc, "reading " + std::string(kRuntimeTable));
    return {};
  }

  // Exact ps times of an ns row; an overflowing one gets has_ts false, which
  // the aggregator drops and counts.
  static void Times(int64_t start_ns, int64_t end_ns, TraceEvent& e) {
    int64_t ts = 0, end = 0;
    e.has_ts = !__builtin_mul_overflow(start_ns, 1000, &ts);
    e.has_dur = true;
    e.dur_exact = !__builtin_mul_overflow(end_ns, 1000, &end) && e.has_ts &&
                  !__builtin_sub_overflow(end, ts, &e.dur_ps);
    e.ts_ps = ts;
  }

  // A row of a device table selected with kDeviceSelect (then any more
  // columns) into `e` with category `cat`; false (and counted) when
  // the row is skipped: a NULL time or device, or a start before the
  // profiler started.
  bool DeviceRow(sqlite3_stmt* st, std::string_view cat, TraceEvent& e) {
    if (sqlite3_column_type(st, 0) == SQLITE_NULL || sqlite3_column_type(st, 1) == SQLITE_NULL ||
        sqlite3_column_type(st, 2) == SQLITE_NULL) {
      ++summary_.drops["bad_row"];
      return false;
    }
    const int64_t start = sqlite3_column_int64(st, 0);
    if (start < 0) {
      ++summary_.drops["before_profiler_start"];
      return false;
    }
    e.Reset();
    e.ph = 'X';
    e.cat = cat;
    e.pid = Id{IdKind::kInt, ProcessOfGlobalId(sqlite3_column_int64(st, 4)), {}};
    e.tid = Id{IdKind::kInt, sqlite3_column_int64(st, 3), {}};
    e.args_device = sqlite3_column_int64(st, 2);
    e.has_args_device = true;
    Times(start, sqlite3_column_int64(st, 1), e);
    return true;
  }

  Status ReadKernels(const std::set<std::string>& cols) {
    for (const char* need : kDeviceColumns) {
      if (!cols.contains(need)) {
        return MakeError(ErrorCode::kUnsupported, std::string(kKernelTable) + " has no column '" +
                                                      need +
                                                      "': not an nsys export this reader knows");
      }
    }
    const bool demangled = cols.contains("demangledName");
    const bool short_name = cols.contains("shortName");
    if (!demangled && !short_name) {
      return MakeError(ErrorCode::kUnsupported,
                       std::string(kKernelTable) + " has neither demangledName nor shortName");
    }
    const bool correlation = !nccl_launches_.empty() && cols.contains("correlationId");
    auto stmt = file_.Prepare(
        std::string(kDeviceSelect) + ", " + std::string(demangled ? "demangledName" : "NULL") +
        ", " + std::string(short_name ? "shortName" : "NULL") + ", " +
        std::string(correlation ? "correlationId" : "NULL") + " FROM " + std::string(kKernelTable));
    if (!stmt) return tl::unexpected(stmt.error());
    sqlite3_stmt* st = stmt->stmt;
    TraceEvent e;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (!DeviceRow(st, kNsysKernelCat, e)) continue;
      // The demangled name is what the classifier's rules are written for
      // (Kineto shows the same); the short name stands in when it is missing.
      for (int col : {5, 6}) {
        if (sqlite3_column_type(st, col) == SQLITE_NULL) continue;
        auto s = StringOf(sqlite3_column_int64(st, col));
        if (!s) return tl::unexpected(s.error());
        if (!(*s)->empty()) {
          e.name = **s;
          e.has_name = true;
          break;
        }
      }
      if (correlation && sqlite3_column_type(st, 7) != SQLITE_NULL) {
        auto launch = nccl_launches_.find({e.pid.num, sqlite3_column_int64(st, 7)});
        if (launch != nccl_launches_.end()) e.args_collective = nccl_names_[launch->second];
      }
      ++summary_.events;
      sink_.OnEvent(e);
    }
    if (rc != SQLITE_DONE) return file_.Fail(rc, "reading " + std::string(kKernelTable));
    return {};
  }

  // Memory copies and sets (optional tables): counted per device as memory
  // operations, never as kernels.
  Status ReadMemops(std::string_view table, const char* name) {
    auto cols = Columns(table);
    if (!cols) return tl::unexpected(cols.error());
    for (const char* need : kDeviceColumns) {
      if (!cols->contains(need)) return {};
    }
    auto stmt = file_.Prepare(std::string(kDeviceSelect) + " FROM " + std::string(table));
    if (!stmt) return tl::unexpected(stmt.error());
    sqlite3_stmt* st = stmt->stmt;
    TraceEvent e;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (!DeviceRow(st, kNsysMemopCat, e)) continue;
      e.name = name;
      e.has_name = true;
      ++summary_.events;
      sink_.OnEvent(e);
    }
    if (rc != SQLITE_DONE) return file_.Fail(rc, "reading " + std::string(table));
    return {};
  }

  sqlite::UntrustedFile file_;
  EventSink& sink_;
  ParseSummary summary_;
  Statement string_stmt_;
  std::unordered_map<int64_t, std::string> strings_;
  // NCCL's NVTX ranges by globalTid, their distinct names, and the kernel
  // launches inside them by (process, correlationId) -> name index.
  struct NcclRange {
    int64_t start = 0, end = 0;
    uint32_t name = 0;
  };
  std::unordered_map<int64_t, std::vector<NcclRange>> nccl_ranges_;
  size_t nccl_range_count_ = 0;
  std::map<std::string, size_t, std::less<>> nccl_name_of_;
  std::vector<std::string_view> nccl_names_;  // keys of nccl_name_of_
  std::map<std::pair<int64_t, int64_t>, uint32_t> nccl_launches_;
};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::optional<int64_t> Digits(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

Result<ParseSummary> ReadNsysExport(const std::string& path, EventSink& sink, FileBudget* budget,
                                    const std::string& open_as) {
  Reader reader(path, sink, budget, open_as);
  auto out = reader.Run();
  if (!out) return tl::unexpected(out.error().Wrap(path));
  return out;
}

std::optional<int64_t> RankOfNvtxText(std::string_view text) {
  for (size_t at = text.find("rank="); at != std::string_view::npos;
       at = text.find("rank=", at + 1)) {
    if (at > 0 && text[at - 1] != ' ' && text[at - 1] != ';' && text[at - 1] != ',') continue;
    size_t end = at + 5;
    while (end < text.size() && IsDigit(text[end])) ++end;
    if (end < text.size() && text[end] != ';' && text[end] != ',' && text[end] != ' ') continue;
    if (auto v = Digits(text.substr(at + 5, end - at - 5))) return v;
  }
  return std::nullopt;
}

std::optional<int64_t> StepOfNvtxText(std::string_view text) {
  if (text.size() < 5) return std::nullopt;
  for (size_t i = 0; i < 4; ++i) {
    if ((text[i] | 0x20) != "step"[i]) return std::nullopt;
  }
  std::string_view rest = text.substr(4);
  if (!rest.empty() && std::string_view(" _#:=").find(rest[0]) != std::string_view::npos) {
    rest.remove_prefix(1);
  }
  return Digits(rest);
}

}  // namespace profwatch::parse
