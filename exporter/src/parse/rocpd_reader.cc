// rocpd SQLite database reader: see rocpd_reader.h.
#include "parse/rocpd_reader.h"

#include <sqlite3.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "parse/nsys_reader.h"
#include "parse/rocprof_reader.h"
#include "parse/sqlite_file.h"

namespace profwatch::parse {
namespace {
// Named for this file: the unity build compiles it with the nsys reader.
namespace rocpd_db {

constexpr std::string_view kDispatchBase = "rocpd_kernel_dispatch";

using Query = sqlite::Statement;

// The suffix rocprofiler-sdk gives its tables: empty, or '_' and the UUID's
// letters, digits and '_'. Anything else is not one of its tables (and never
// reaches an SQL text).
bool IsTableSuffix(std::string_view s) {
  if (s.empty()) return true;
  if (s.front() != '_' || s.size() > 80) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  });
}

std::string_view Text(sqlite3_stmt* st, int col) {
  const auto* p = sqlite3_column_text(st, col);
  if (p == nullptr) return {};
  return {reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(st, col))};
}

class Reader {
 public:
  Reader(const std::string& path, EventSink* sink, FileBudget* budget, const std::string& open_as)
      : file_(path, open_as, budget), sink_(sink) {}

  // Whether the database holds a rocpd kernel dispatch table (checks the
  // file is not being written first). The size is not charged here.
  Result<bool> Probe() {
    if (auto s = file_.Open("a profile", /*charge=*/false); !s) return tl::unexpected(s.error());
    auto sets = Suffixes();
    if (!sets) return tl::unexpected(sets.error());
    return !sets->empty();
  }

  Result<ParseSummary> Run() {
    summary_.schema = TraceSchema::kRocprof;
    if (auto s = file_.Open("a profile", /*charge=*/true); !s) return tl::unexpected(s.error());
    auto sets = Suffixes();
    if (!sets) return tl::unexpected(sets.error());
    if (sets->empty()) {
      return MakeError(ErrorCode::kUnsupported,
                       "no rocpd_kernel_dispatch table: not a rocpd database, or profiled "
                       "without kernel trace (rocprofv3 --kernel-trace)");
    }
    size_t n = 0;
    for (const std::string& suffix : *sets) {
      if (++n > kMaxRocpdTableSets) {
        ++summary_.drops["table_set_limit"];
        continue;
      }
      if (auto s = ReadSet(suffix); !s) return tl::unexpected(s.error());
    }
    return summary_;
  }

 private:
  struct Agent {
    int64_t pid = 0;
    int64_t index = 0;  // absolute_index (node id)
    int gpu = -1;       // GPU index within the process; -1 for a CPU
    bool dispatched = false;
    std::string product_name;
  };
  using Key = std::pair<int64_t, int64_t>;  // (pid, id)

  // The suffixes of the real tables named rocpd_kernel_dispatch[_<uuid>].
  Result<std::vector<std::string>> Suffixes() {
    auto q = file_.Prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND "
        "(name = 'rocpd_kernel_dispatch' OR name GLOB 'rocpd_kernel_dispatch_*') ORDER BY name");
    if (!q) return tl::unexpected(q.error());
    std::vector<std::string> out;
    int rc;
    while ((rc = sqlite3_step(q->stmt)) == SQLITE_ROW) {
      const std::string_view suffix = Text(q->stmt, 0).substr(kDispatchBase.size());
      if (IsTableSuffix(suffix)) out.emplace_back(suffix);
    }
    if (rc != SQLITE_DONE) return file_.Fail(rc, "reading the schema");
    return out;
  }

  // The column names of the real table `name` (empty when there is none).
  Result<std::set<std::string>> Columns(const std::string& name) {
    auto kind = file_.Prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1");
    if (!kind) return tl::unexpected(kind.error());
    sqlite3_bind_text(kind->stmt, 1, name.c_str(), static_cast<int>(name.size()), SQLITE_STATIC);
    int rc = sqlite3_step(kind->stmt);
    if (rc == SQLITE_DONE) return std::set<std::string>{};
    if (rc != SQLITE_ROW) return file_.Fail(rc, "reading the schema");
    auto q = file_.Prepare("SELECT name FROM pragma_table_info('" + name + "')");
    if (!q) return tl::unexpected(q.error());
    std::set<std::string> out;
    while ((rc = sqlite3_step(q->stmt)) == SQLITE_ROW) out.emplace(Text(q->stmt, 0));
    if (rc != SQLITE_DONE) return file_.Fail(rc, "reading the schema of " + name);
    return out;
  }

  // `SELECT cols FROM table` where every one of `need` must exist (else
  // kUnsupported when `required`, or an empty query) and `optional` ones are
  // NULL when absent.
  Result<Query> Select(const std::string& table, std::initializer_list<const char*> need,
                       std::initializer_list<const char*> optional, bool required) {
    auto cols = Columns(table);
    if (!cols) return tl::unexpected(cols.error());
    std::string sql = "SELECT ";
    bool first = true;
    for (const char* c : need) {
      if (!cols->contains(c)) {
        if (!required) return Query{};
        return MakeError(ErrorCode::kUnsupported,
                         cols->empty() ? "no " + table + " table: not a rocpd database"
                                       : table + " lacks column " + c + ": not a rocpd database");
      }
      sql += (first ? "\"" : ", \"") + std::string(c) + "\"";
      first = false;
    }
    for (const char* c : optional) {
      sql += cols->contains(c) ? ", \"" + std::string(c) + "\"" : std::string(", NULL");
    }
    return file_.Prepare(sql + " FROM \"" + table + "\"");
  }

  Status ReadSet(const std::string& suffix) {
    agents_.clear();
    symbols_.clear();
    rccl_names_.clear();
    rccl_calls_.clear();
    rccl_call_count_ = 0;
    if (auto s = ReadAgents(suffix); !s) return s;
    if (auto s = ReadSymbols(suffix); !s) return s;
    if (auto s = ReadRegions(suffix); !s) return s;
    if (auto s = ReadDispatches(suffix); !s) return s;
    if (auto s = ReadCopies(suffix); !s) return s;
    Finish();
    return {};
  }

  Status ReadAgents(const std::string& suffix) {
    auto q = Select("rocpd_info_agent" + suffix, {"id", "pid", "type"},
                    {"absolute_index", "product_name", "name"}, /*required=*/true);
    if (!q) return tl::unexpected(q.error());
    sqlite3_stmt* st = q->stmt;
    std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> gpus;  // pid -> (index, id)
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (sqlite3_column_type(st, 0) == SQLITE_NULL || sqlite3_column_type(st, 1) == SQLITE_NULL) {
        ++summary_.drops["bad_row"];
        continue;
      }
      if (agents_.size() >= kMaxRocprofAgents) {
        ++summary_.drops["agent_limit"];
        continue;
      }
      const int64_t pid = sqlite3_column_int64(st, 1);
      const int64_t id = sqlite3_column_int64(st, 0);
      Agent a;
      a.pid = pid;
      a.index = sqlite3_column_type(st, 3) == SQLITE_NULL ? id : sqlite3_column_int64(st, 3);
      a.product_name = std::string(Text(st, sqlite3_column_type(st, 4) == SQLITE_NULL ? 5 : 4));
      const int64_t index = a.index;
      const bool gpu = Text(st, 2) == "GPU";
      if (agents_.emplace(Key{pid, id}, std::move(a)).second && gpu) {
        gpus[pid].emplace_back(index, id);
      }
    }
    if (rc != SQLITE_DONE) return file_.Fail(rc, "reading rocpd_info_agent");
    for (auto& [pid, list] : gpus) {
      std::sort(list.begin(), list.end());
      for (size_t i = 0; i < list.size(); ++i) {
        agents_.at(Key{pid, list[i].second}).gpu = static_cast<int>(i);
      }
    }
    return {};
  }

  Status ReadSymbols(const std::string& suffix) {
    auto q = Select("rocpd_info_kernel_symbol" + suffix, {"id", "pid"},
                    {"display_name", "kernel_name"}, /*required=*/true);
    if (!q) return tl::unexpected(q.error());
    sqlite3_stmt* st = q->stmt;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (sqlite3_column_type(st, 0) == SQLITE_NULL || sqlite3_column_type(st, 1) == SQLITE_NULL) {
        ++summary_.drops["bad_row"];
        continue;
      }
      std::string_view name = Text(st, 2);
      if (name.empty()) name = Text(st, 3);
      if (symbols_.size() >= kMaxRocprofSymbols ||
          symbol_bytes_ + name.size() > kMaxRocprofSymbolBytes) {
        ++summary_.drops["symbol_limit"];
        continue;
      }
      symbol_bytes_ += name.size();
      symbols_.emplace(Key{sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 0)},
                       std::string(name));
    }
    if (rc != SQLITE_DONE) return file_.Fail(rc, "reading rocpd_info_kernel_symbol");
    return {};
  }

  // Exact ps times of an ns row relative to the file's base; false (and
  // counted) when they cannot be.
  bool Times(sqlite3_stmt* st, int start_col, TraceEvent& e) {
    if (sqlite3_column_type(st, start_col) == SQLITE_NULL ||
        sqlite3_column_type(st, start_col + 1) == SQLITE_NULL) {
      ++summary_.drops["bad_row"];
      return false;
    }
    const int64_t start = sqlite3_column_int64(st, start_col);
    const int64_t end = sqlite3_column_int64(st, start_col + 1);
    if (start <= 0 || end < start) {
      ++summary_.drops["bad_time"];
      return false;
    }
    if (!base_ns_) {
      base_ns_ = start / 1000 * 1000;
      summary_.time_base_us = start / 1000;
    }
    int64_t ts = 0, dur = 0, rel_end = 0;
    if (__builtin_mul_overflow(start - *base_ns_, 1000, &ts) ||
        __builtin_mul_overflow(end - start, 1000, &dur) ||
        __builtin_add_overflow(ts, dur, &rel_end)) {
      ++summary_.drops["bad_time"];
      return false;
    }
    e.ts_ps = ts;
    e.dur_ps = dur;
    e.has_ts = e.has_dur = e.dur_exact = true;
    return true;
  }

  void Emit(TraceEvent& e, int64_t pid) {
    e.ph = 'X';
    e.has_name = true;
    e.pid = Id{IdKind::kInt, pid, {}};
    sink_->OnEvent(e);
    ++summary_.events;
  }

  int64_t QueueOf(const Key& agent, int64_t queue) {
    const std::tuple<int64_t, int64_t, int64_t> key{agent.first, agent.second, queue};
    auto it = queues_.find(key);
    if (it != queues_.end()) return it->second;
    if (queues_.size() >= kMaxRocprofQueues) {
      ++summary_.drops["queue_limit"];
      return static_cast<int64_t>(kMaxRocprofQueues);
    }
    const int64_t n = queues_per_agent_[agent]++;
    queues_.emplace(key, n);
    return n;
  }

  Status ReadDispatches(const std::string& suffix) {
    const std::string table = "rocpd_kernel_dispatch" + suffix;
    auto q = Select(table, {"pid", "agent_id", "kernel_id", "start", "end"}, {"queue_id", "tid"},
                    /*required=*/true);
    if (!q) return tl::unexpected(q.error());
    bool has_corr = false;  // column 7: the correlation id
    if (!rccl_calls_.empty()) {
      // The dispatch's correlation id is its event's stack_id
      // (generateRocpd.cpp): joined by the event's primary key.
      auto dispatch_cols = Columns(table);
      if (!dispatch_cols) return tl::unexpected(dispatch_cols.error());
      auto event_cols = Columns("rocpd_event" + suffix);
      if (!event_cols) return tl::unexpected(event_cols.error());
      if (dispatch_cols->contains("tid") && dispatch_cols->contains("event_id") &&
          dispatch_cols->contains("queue_id") && event_cols->contains("id") &&
          event_cols->contains("stack_id")) {
        auto joined = file_.Prepare(
            "SELECT d.\"pid\", d.\"agent_id\", d.\"kernel_id\", d.\"start\", d.\"end\", "
            "d.\"queue_id\", d.\"tid\", e.\"stack_id\" FROM \"" +
            table + "\" AS d LEFT JOIN \"rocpd_event" + suffix +
            "\" AS e ON e.\"id\" = d.\"event_id\"");
        if (!joined) return tl::unexpected(joined.error());
        q = std::move(joined);
        has_corr = true;
      }
    }
    sqlite3_stmt* st = q->stmt;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (sqlite3_column_type(st, 0) == SQLITE_NULL || sqlite3_column_type(st, 1) == SQLITE_NULL ||
          sqlite3_column_type(st, 2) == SQLITE_NULL) {
        ++summary_.drops["bad_row"];
        continue;
      }
      const int64_t pid = sqlite3_column_int64(st, 0);
      const Key agent{pid, sqlite3_column_int64(st, 1)};
      auto a = agents_.find(agent);
      if (a == agents_.end() || a->second.gpu < 0) {
        ++summary_.drops["unknown_agent"];
        continue;
      }
      TraceEvent e;
      if (!Times(st, 3, e)) continue;
      auto s = symbols_.find(Key{pid, sqlite3_column_int64(st, 2)});
      if (s == symbols_.end()) {
        ++summary_.drops["unknown_kernel"];
        continue;
      }
      e.cat = kNsysKernelCat;
      e.name = s->second;
      e.args_device = a->second.gpu;
      e.has_args_device = true;
      e.tid = Id{IdKind::kInt, QueueOf(agent, sqlite3_column_int64(st, 5)), {}};
      a->second.dispatched = true;
      if (has_corr && IsRcclKernelName(e.name) && sqlite3_column_type(st, 6) != SQLITE_NULL &&
          sqlite3_column_type(st, 7) != SQLITE_NULL) {
        e.args_collective =
            CollectiveOf(Key{pid, sqlite3_column_int64(st, 6)}, sqlite3_column_int64(st, 7));
      }
      Emit(e, pid);
    }
    if (rc != SQLITE_DONE) return file_.Fail(rc, "reading rocpd_kernel_dispatch");
    return {};
  }

  Status ReadCopies(const std::string& suffix) {
    auto q = Select("rocpd_memory_copy" + suffix, {"pid", "start", "end"},
                    {"dst_agent_id", "src_agent_id", "size"}, /*required=*/false);
    if (!q) return tl::unexpected(q.error());
    sqlite3_stmt* st = q->stmt;
    if (st == nullptr) return {};
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (sqlite3_column_type(st, 0) == SQLITE_NULL) {
        ++summary_.drops["bad_row"];
        continue;
      }
      const int64_t pid = sqlite3_column_int64(st, 0);
      const Agent* gpu = nullptr;
      bool named = false;
      for (int col : {3, 4}) {
        if (sqlite3_column_type(st, col) == SQLITE_NULL || gpu != nullptr) continue;
        named = true;
        auto a = agents_.find(Key{pid, sqlite3_column_int64(st, col)});
        if (a != agents_.end() && a->second.gpu >= 0) gpu = &a->second;
      }
      if (gpu == nullptr) {
        ++summary_.drops[named ? "unknown_agent" : "bad_row"];
        continue;
      }
      TraceEvent e;
      if (!Times(st, 1, e)) continue;
      e.cat = kNsysMemopCat;
      e.name = "Memcpy";
      e.args_device = gpu->gpu;
      e.has_args_device = true;
      if (sqlite3_column_type(st, 5) != SQLITE_NULL && sqlite3_column_int64(st, 5) >= 0) {
        e.args_bytes = sqlite3_column_int64(st, 5);
      }
      Emit(e, pid);
    }
    if (rc != SQLITE_DONE) return file_.Fail(rc, "reading rocpd_memory_copy");
    return {};
  }

  // The latest collective RCCL call of the thread before correlation id
  // `corr` (rocprofiler-sdk numbers calls in call order; a dispatch has the
  // id of the launch inside the call); empty when none.
  std::string_view CollectiveOf(const Key& thread, int64_t corr) {
    auto calls = rccl_calls_.find(thread);
    if (calls == rccl_calls_.end()) return {};
    auto it = calls->second.lower_bound(corr);
    if (it == calls->second.begin()) return {};
    auto name = rccl_names_.find(std::prev(it)->second);
    return name == rccl_names_.end() ? std::string_view{} : std::string_view(name->second);
  }

  // Steps and ranks: the strings that name one (bounded), then the regions
  // with those names; and the RCCL API calls (regions named like a
  // collective, their id the call's correlation id) by thread.
  Status ReadRegions(const std::string& suffix) {
    auto strings = Select("rocpd_string" + suffix, {"id", "string"}, {}, /*required=*/false);
    if (!strings) return tl::unexpected(strings.error());
    if (strings->stmt == nullptr) return {};
    std::map<int64_t, std::pair<std::optional<int64_t>, std::optional<int64_t>>> named;
    sqlite3_stmt* st = strings->stmt;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      const std::string_view text = Text(st, 1);
      if (IsRcclCollectiveOperation(text)) {
        if (rccl_names_.size() < kMaxRocprofRcclOperations) {
          rccl_names_.emplace(sqlite3_column_int64(st, 0), std::string(text.substr(0, 256)));
        }
        continue;
      }
      auto step = StepOfNvtxText(text);
      auto rank = RankOfNvtxText(text);
      if (!step && !rank) continue;
      if (named.size() >= kMaxRocprofMarkers) {
        ++summary_.drops["marker_limit"];
        continue;
      }
      named[sqlite3_column_int64(st, 0)] = {step, rank};
    }
    if (rc != SQLITE_DONE) return file_.Fail(rc, "reading rocpd_string");
    if (named.empty() && rccl_names_.empty()) return {};
    auto q = Select("rocpd_region" + suffix, {"pid", "start", "end", "name_id"}, {"id", "tid"},
                    /*required=*/false);
    if (!q) return tl::unexpected(q.error());
    if (q->stmt == nullptr) return {};
    st = q->stmt;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (sqlite3_column_type(st, 3) == SQLITE_NULL) continue;
      if (rccl_names_.count(sqlite3_column_int64(st, 3)) != 0) {
        if (sqlite3_column_type(st, 0) == SQLITE_NULL ||
            sqlite3_column_type(st, 4) == SQLITE_NULL ||
            sqlite3_column_type(st, 5) == SQLITE_NULL) {
          continue;
        }
        if (rccl_call_count_ >= kMaxRocprofRcclCalls) {
          ++summary_.drops["rccl_call_limit"];
          continue;
        }
        ++rccl_call_count_;
        rccl_calls_[Key{sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 5)}]
                   [sqlite3_column_int64(st, 4)] = sqlite3_column_int64(st, 3);
        continue;
      }
      auto it = named.find(sqlite3_column_int64(st, 3));
      if (it == named.end()) continue;
      if (sqlite3_column_type(st, 0) == SQLITE_NULL) {
        ++summary_.drops["bad_row"];
        continue;
      }
      const int64_t pid = sqlite3_column_int64(st, 0);
      TraceEvent e;
      if (!Times(st, 1, e)) continue;
      const auto& [step, rank] = it->second;
      if (rank) {
        // The earliest range naming a rank gives the process's rank.
        auto [at, inserted] = rank_start_.try_emplace(pid, e.ts_ps);
        if (inserted || e.ts_ps < at->second) {
          at->second = e.ts_ps;
          summary_.process_ranks[pid] = *rank;
        }
      }
      if (!step || e.dur_ps == 0) continue;  // a mark is no range
      e.cat = kNsysStepCat;
      // The event names its text by view: the text lives until Emit returns.
      const std::string step_name = std::to_string(*step);
      e.name = step_name;
      Emit(e, pid);
    }
    if (rc != SQLITE_DONE) return file_.Fail(rc, "reading rocpd_region");
    return {};
  }

  // The GPU agents that dispatched name the devices (by process, then GPU
  // index); the others are seen.
  void Finish() {
    std::vector<const Agent*> gpus;
    for (const auto& [key, a] : agents_) {
      if (a.gpu >= 0) gpus.push_back(&a);
    }
    std::sort(gpus.begin(), gpus.end(), [](const Agent* x, const Agent* y) {
      return std::pair{x->pid, x->gpu} < std::pair{y->pid, y->gpu};
    });
    int64_t idle = summary_.idle_gpu_agents.value_or(0);
    for (const Agent* a : gpus) {
      if (a->dispatched) {
        summary_.device_names.push_back(a->product_name);
      } else {
        ++idle;
        if (summary_.idle_gpu_agent_names.size() < kMaxIdleGpuAgentNames) {
          summary_.idle_gpu_agent_names.push_back(
              IdleGpuAgentName(a->pid, a->gpu, a->product_name));
        }
      }
    }
    summary_.idle_gpu_agents = idle;
  }

  sqlite::UntrustedFile file_;
  EventSink* sink_;
  ParseSummary summary_;
  std::optional<int64_t> base_ns_;
  std::map<Key, Agent> agents_;
  std::map<Key, std::string> symbols_;
  size_t symbol_bytes_ = 0;
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> queues_;  // (pid, agent, queue)
  std::map<Key, int64_t> queues_per_agent_;
  std::map<int64_t, int64_t> rank_start_;                 // pid -> earliest rank ts
  std::map<int64_t, std::string> rccl_names_;             // string id -> RCCL collective name
  std::map<Key, std::map<int64_t, int64_t>> rccl_calls_;  // (pid, tid) -> corr -> string id
  size_t rccl_call_count_ = 0;
};

}  // namespace rocpd_db
}  // namespace

Result<ParseSummary> ReadRocpdDatabase(const std::string& path, EventSink& sink, FileBudget* budget,
                                       const std::string& open_as) {
  rocpd_db::Reader reader(path, &sink, budget, open_as);
  return reader.Run();
}

Result<ParseSummary> ReadSqliteTrace(const std::string& path, EventSink& sink, FileBudget* budget,
                                     const std::string& open_as) {
  Result<bool> rocpd = rocpd_db::Reader(path, nullptr, budget, open_as).Probe();
  if (!rocpd) return tl::unexpected(rocpd.error());
  if (*rocpd) return ReadRocpdDatabase(path, sink, budget, open_as);
  return ReadNsysExport(path, sink, budget, open_as);
}

}  // namespace profwatch::parse
