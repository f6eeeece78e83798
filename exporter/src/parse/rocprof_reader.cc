// rocprofv3 JSON reader: see rocprof_reader.h.
#include "parse/rocprof_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "parse/nsys_reader.h"

namespace profwatch::parse {
// A named namespace inside the anonymous one: unity builds share the latter
// with the other readers (which have their own Reader).
namespace {
namespace rocprof_json {

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// A pull tokenizer over the byte stream that follows the JSON structure only
// where asked, and cuts whole values out of it (bounded) for simdjson.
class Stream {
 public:
  Stream(read::ByteSource& source, size_t chunk) : source_(source), buf_(chunk, '\0') {}

  bool ok() const { return !error_; }
  const Error& error() const { return *error_; }
  uint64_t consumed() const { return consumed_; }

  // The next non-space byte without taking it; -1 at the end (an error:
  // the document is not complete).
  int Peek() {
    while (true) {
      if (!Fill()) return -1;
      while (pos_ < end_ && IsJsonSpace(buf_[pos_])) ++pos_;
      if (pos_ < end_) return static_cast<unsigned char>(buf_[pos_]);
    }
  }
  bool Expect(char c) {
    if (Peek() != c) return Fail(std::string("expected '") + c + "'");
    ++pos_;
    return true;
  }
  // A string's raw text (escapes kept), at most `max` bytes kept.
  bool String(std::string* out, size_t max) {
    if (!Expect('"')) return false;
    out->clear();
    bool escaped = false;
    while (true) {
      if (!Fill()) return false;
      const char c = buf_[pos_++];
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        return true;
      }
      if (out->size() < max) out->push_back(c);
    }
  }
  // Skips one value (any depth: a counter, no stack), or copies it into
  // `out` while it fits in `max` bytes (*cut set when it did not).
  bool Value(std::string* out = nullptr, size_t max = 0, bool* cut = nullptr) {
    if (out != nullptr) out->clear();
    if (Peek() < 0) return false;
    uint64_t depth = 0;
    bool in_string = false, escaped = false;
    auto keep = [&](char c) {
      if (out == nullptr) return;
      if (out->size() < max) {
        out->push_back(c);
      } else if (cut != nullptr) {
        *cut = true;
      }
    };
    while (true) {
      if (!Fill()) return false;
      const char c = buf_[pos_];
      if (in_string) {
        ++pos_;
        keep(c);
        if (escaped) {
          escaped = false;
        } else if (c == '\\') {
          escaped = true;
        } else if (c == '"') {
          in_string = false;
          if (depth == 0) return true;
        }
        continue;
      }
      if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (depth == 0) return true;  // a scalar ended by its container
        --depth;
        ++pos_;
        keep(c);
        if (depth == 0) return true;
        continue;
      } else if (depth == 0 && (c == ',' || IsJsonSpace(c))) {
        return true;  // a scalar ended
      }
      ++pos_;
      keep(c);
    }
  }
  // Calls on_member(key) for each member of an object; on_member consumes
  // the value.
  template <class F>
  bool Object(F on_member) {
    if (!Expect('{')) return false;
    if (Peek() == '}') return Expect('}');
    std::string key;
    while (true) {
      if (!String(&key, 256) || !Expect(':') || !on_member(key)) return false;
      const int c = Peek();
      if (c == ',') {
        ++pos_;
        continue;
      }
      return Expect('}');
    }
  }
  // Calls on_element() for each element of an array; it consumes the value.
  template <class F>
  bool Array(F on_element) {
    if (!Expect('[')) return false;
    if (Peek() == ']') return Expect(']');
    while (true) {
      if (!on_element()) return false;
      const int c = Peek();
      if (c == ',') {
        ++pos_;
        continue;
      }
      return Expect(']');
    }
  }
  bool Fail(std::string why) {
    if (!error_) {
      error_ = Error{eof_ ? ErrorCode::kTruncated : ErrorCode::kCorrupt,
                     eof_ ? "rocprofv3 JSON ends early" : "rocprofv3 JSON: " + why};
    }
    return false;
  }

 private:
  // True when a byte is available at pos_.
  bool Fill() {
    if (pos_ < end_) return true;
    if (error_) return false;
    if (eof_) return Fail("ends early");
    auto got = source_.Read(buf_.data(), buf_.size());
    if (!got) {
      error_ = got.error();
      return false;
    }
    if (*got == 0) {
      eof_ = true;
      return Fail("ends early");
    }
    consumed_ += *got;
    pos_ = 0;
    end_ = *got;
    return true;
  }

  read::ByteSource& source_;
  std::string buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t consumed_ = 0;
  bool eof_ = false;
  std::optional<Error> error_;
};

using simdjson::dom::element;

std::optional<uint64_t> U64(element e, std::string_view key) {
  uint64_t v = 0;
  if (e[key].get_uint64().get(v) != simdjson::SUCCESS) return std::nullopt;
  return v;
}
std::optional<uint64_t> Handle(element e, std::string_view key) {
  element inner;
  if (e[key].get(inner) != simdjson::SUCCESS) return std::nullopt;
  return U64(inner, "handle");
}
std::string_view Str(element e, std::string_view key) {
  std::string_view v;
  if (e[key].get_string().get(v) != simdjson::SUCCESS) return {};
  return v;
}

struct Agent {
  int type = 0;  // 1 CPU, 2 GPU
  uint64_t node_id = 0;
  std::string product_name;
  int64_t gpu = -1;  // GPU index, once the agents are read
  bool dispatched = false;
};

class Reader {
 public:
  Reader(read::ByteSource& source, EventSink& sink, const RocprofOptions& options)
      : in_(source, std::max<size_t>(options.chunk_bytes, 64)),
        sink_(sink),
        max_record_(options.max_record_bytes) {}

  Result<ParseSummary> Run() {
    summary_.schema = TraceSchema::kRocprof;
    bool saw_key = false;
    const bool ok = in_.Object([&](const std::string& key) {
      if (key != kRocprofKey) return in_.Value();
      saw_key = true;
      return in_.Array([&] { return Process(); });
    });
    summary_.json_bytes = in_.consumed();
    if (!ok) return tl::unexpected(in_.error());
    if (!saw_key) {
      return MakeError(ErrorCode::kUnsupported, "JSON object without a rocprofiler-sdk-tool key");
    }
    return summary_;
  }

 private:
  // One entry of the tool array: one process.
  bool Process() {
    agents_.clear();
    symbols_.clear();
    symbol_bytes_ = 0;
    queues_.clear();
    marker_steps_.clear();
    marker_ranks_.clear();
    rccl_ops_.clear();
    rccl_calls_.clear();
    rccl_call_count_ = 0;
    held_.clear();
    pid_ = 0;
    const bool ok = in_.Object([&](const std::string& key) {
      if (key == "metadata") return Metadata();
      if (key == "agents") return Records([&](element r) { OnAgent(r); }, true);
      if (key == "strings") return Strings();
      if (key == "kernel_symbols") return Records([&](element r) { Symbol(r); });
      if (key == "buffer_records") return BufferRecords();
      return in_.Value();
    });
    FinishProcess();
    return ok;
  }

  bool Metadata() {
    return in_.Object([&](const std::string& key) {
      if (key != "pid") return in_.Value();
      std::string text;
      bool cut = false;
      if (!in_.Value(&text, 32, &cut)) return false;
      int64_t pid = 0;
      const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
      if (cut || ec != std::errc() || p != text.data() + text.size() || pid < 0) {
        ++summary_.drops["bad_record"];
      } else {
        pid_ = pid;
      }
      return true;
    });
  }

  bool Strings() {
    return in_.Object([&](const std::string& key) {
      if (key == "marker_api") return Records([&](element r) { MarkerText(r); });
      if (key == "buffer_records") return Records([&](element r) { OperationNames(r); });
      return in_.Value();
    });
  }

  bool BufferRecords() {
    return in_.Object([&](const std::string& key) {
      if (key == "kernel_dispatch") return Records([&](element r) { Dispatch(r); });
      if (key == "memory_copy") return Records([&](element r) { Copy(r); });
      if (key == "marker_api") return Records([&](element r) { Marker(r); });
      if (key == "rccl_api") return Records([&](element r) { RcclCall(r); });
      return in_.Value();
    });
  }

  // Each element of an array, cut out and parsed alone. `agents`: the GPU
  // indices are given when the array ends.
  template <class F>
  bool Records(F on_record, bool agents = false) {
    if (in_.Peek() != '[') {
      ++summary_.drops["bad_record"];
      return in_.Value();
    }
    std::string text;
    const bool ok = in_.Array([&] {
      bool cut = false;
      if (!in_.Value(&text, max_record_, &cut)) return false;
      if (cut) {
        ++summary_.drops["record_too_large"];
        return true;
      }
      element doc;
      if (json_.parse(text).get(doc) != simdjson::SUCCESS || !doc.is_object()) {
        ++summary_.drops["bad_record"];
        return true;
      }
      on_record(doc);
      return true;
    });
    if (agents) NumberGpus();
    return ok;
  }

  void OnAgent(element r) {
    const auto handle = Handle(r, "id");
    const auto type = U64(r, "type");
    if (!handle || !type) {
      ++summary_.drops["bad_record"];
      return;
    }
    if (agents_.size() >= kMaxRocprofAgents && agents_.count(*handle) == 0) {
      ++summary_.drops["agent_limit"];
      return;
    }
    Agent& a = agents_[*handle];
    a.type = static_cast<int>(std::min<uint64_t>(*type, 1000));
    a.node_id = U64(r, "node_id").value_or(0);
    std::string_view name = Str(r, "product_name");
    if (name.empty()) name = Str(r, "name");
    a.product_name = std::string(name.substr(0, 256));
  }

  // GPU index = rank among the GPU agents by node id (HIP's ordinal).
  void NumberGpus() {
    std::vector<std::pair<uint64_t, Agent*>> gpus;
    for (auto& [handle, a] : agents_) {
      if (a.type == 2) gpus.emplace_back(a.node_id, &a);
    }
    std::sort(gpus.begin(), gpus.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    for (size_t i = 0; i < gpus.size(); ++i) gpus[i].second->gpu = static_cast<int64_t>(i);
  }

  void Symbol(element r) {
    const auto id = U64(r, "kernel_id");
    if (!id) {
      ++summary_.drops["bad_record"];
      return;
    }
    std::string_view name = Str(r, "demangled_kernel_name");
    if (name.empty()) name = Str(r, "kernel_name");
    if (name.empty()) {
      ++summary_.drops["bad_record"];
      return;
    }
    if (symbols_.size() >= kMaxRocprofSymbols ||
        symbol_bytes_ + name.size() > kMaxRocprofSymbolBytes) {
      ++summary_.drops["symbol_limit"];
      return;
    }
    auto [it, inserted] = symbols_.try_emplace(*id, name);
    if (inserted) symbol_bytes_ += name.size();
  }

  void MarkerText(element r) {
    const auto key = U64(r, "key");
    const std::string_view text = Str(r, "value");
    if (!key) {
      ++summary_.drops["bad_record"];
      return;
    }
    const auto step = StepOfNvtxText(text);
    const auto rank = RankOfNvtxText(text);
    if (!step && !rank) return;  // only step and rank texts are kept
    if (marker_steps_.size() + marker_ranks_.size() >= kMaxRocprofMarkers) {
      ++summary_.drops["marker_limit"];
      return;
    }
    if (step) marker_steps_[*key] = *step;
    if (rank) marker_ranks_[*key] = *rank;
  }

  // Exact ps times of an ns record relative to the file's base; false (and
  // counted) when they cannot be.
  bool Times(element r, TraceEvent& e) {
    const auto start = U64(r, "start_timestamp");
    const auto end = U64(r, "end_timestamp");
    if (!start || !end) {
      ++summary_.drops["bad_record"];
      return false;
    }
    if (*start == 0 || *end < *start || *start > static_cast<uint64_t>(INT64_MAX)) {
      ++summary_.drops["bad_time"];
      return false;
    }
    if (!base_ns_) {
      base_ns_ = *start / 1000 * 1000;
      summary_.time_base_us = static_cast<int64_t>(*start / 1000);
    }
    const int64_t rel = static_cast<int64_t>(*start) - *base_ns_;
    int64_t ts = 0, dur = 0;
    if (__builtin_mul_overflow(rel, 1000, &ts) ||
        __builtin_mul_overflow(static_cast<int64_t>(std::min<uint64_t>(*end - *start, INT64_MAX)),
                               1000, &dur) ||
        __builtin_add_overflow(ts, dur, &rel_end_)) {
      ++summary_.drops["bad_time"];
      return false;
    }
    e.ts_ps = ts;
    e.dur_ps = dur;
    e.has_ts = e.has_dur = e.dur_exact = true;
    return true;
  }

  void Emit(TraceEvent& e) {
    e.ph = 'X';
    e.has_name = true;
    e.pid = Id{IdKind::kInt, pid_, {}};
    sink_.OnEvent(e);
    ++summary_.events;
  }

  void Dispatch(element r) {
    element info;
    if (r["dispatch_info"].get(info) != simdjson::SUCCESS) {
      ++summary_.drops["bad_record"];
      return;
    }
    const auto agent = Handle(info, "agent_id");
    const auto kernel = U64(info, "kernel_id");
    if (!agent || !kernel) {
      ++summary_.drops["bad_record"];
      return;
    }
    auto a = agents_.find(*agent);
    if (a == agents_.end() || a->second.gpu < 0) {
      ++summary_.drops["unknown_agent"];
      return;
    }
    TraceEvent e;
    if (!Times(r, e)) return;
    auto s = symbols_.find(*kernel);
    if (s == symbols_.end()) {
      ++summary_.drops["unknown_kernel"];
      return;
    }
    e.cat = kNsysKernelCat;
    e.name = s->second;
    e.args_device = a->second.gpu;
    e.has_args_device = true;
    e.tid = Id{IdKind::kInt, QueueOf(*agent, Handle(info, "queue_id").value_or(0)), {}};
    a->second.dispatched = true;
    if (IsRcclKernelName(e.name) && held_.size() < kMaxRocprofRcclKernels) {
      // Its collective is known once the process's rccl_api records are read.
      element corr;
      uint64_t id = 0;
      if (r["correlation_id"].get(corr) != simdjson::SUCCESS ||
          corr["internal"].get_uint64().get(id) != simdjson::SUCCESS) {
        id = 0;  // no id: no collective
      }
      held_.push_back({e, U64(r, "thread_id").value_or(0), id});
      return;
    }
    Emit(e);
  }

  // strings.buffer_records[]: {"kind": "RCCL_API", "operations": [names]}.
  void OperationNames(element r) {
    if (Str(r, "kind") != "RCCL_API") return;
    simdjson::dom::array ops;
    if (r["operations"].get(ops) != simdjson::SUCCESS) {
      ++summary_.drops["bad_record"];
      return;
    }
    rccl_ops_.clear();
    for (element op : ops) {
      std::string_view name;
      if (rccl_ops_.size() >= kMaxRocprofRcclOperations) break;
      rccl_ops_.emplace_back(op.get_string().get(name) == simdjson::SUCCESS ? name.substr(0, 256)
                                                                            : std::string_view{});
    }
  }

  // buffer_records.rccl_api[]: the collective calls of each thread by
  // correlation id (rocprofiler-sdk numbers API calls in call order).
  void RcclCall(element r) {
    const auto op = U64(r, "operation");
    element corr;
    uint64_t id = 0;
    if (!op || r["correlation_id"].get(corr) != simdjson::SUCCESS ||
        corr["internal"].get_uint64().get(id) != simdjson::SUCCESS) {
      ++summary_.drops["bad_record"];
      return;
    }
    if (*op >= rccl_ops_.size() || !IsRcclCollectiveOperation(rccl_ops_[*op])) return;
    if (rccl_call_count_ >= kMaxRocprofRcclCalls) {
      ++summary_.drops["rccl_call_limit"];
      return;
    }
    ++rccl_call_count_;
    rccl_calls_[U64(r, "thread_id").value_or(0)][id] = static_cast<uint32_t>(*op);
  }

  // Each held RCCL kernel gets the latest collective call of its launching
  // thread before it (correlation id below the dispatch's), then is emitted.
  void EmitRcclKernels() {
    for (Held& h : held_) {
      auto calls = rccl_calls_.find(h.thread);
      if (calls != rccl_calls_.end() && h.corr != 0) {
        auto it = calls->second.lower_bound(h.corr);
        if (it != calls->second.begin()) h.e.args_collective = rccl_ops_[std::prev(it)->second];
      }
      Emit(h.e);
    }
    held_.clear();
  }

  // Queues numbered per agent in order of first sight; past the cap, one
  // shared number (the device's stream cap sums them anyway).
  int64_t QueueOf(uint64_t agent, uint64_t queue) {
    auto it = queues_.find({agent, queue});
    if (it != queues_.end()) return it->second;
    if (queues_.size() >= kMaxRocprofQueues) {
      ++summary_.drops["queue_limit"];
      return static_cast<int64_t>(kMaxRocprofQueues);
    }
    int64_t n = 0;
    for (const auto& [key, q] : queues_) n += key.first == agent;
    queues_.emplace(std::pair{agent, queue}, n);
    return n;
  }

  void Copy(element r) {
    const auto dst = Handle(r, "dst_agent_id");
    const auto src = Handle(r, "src_agent_id");
    const Agent* gpu = nullptr;
    for (const auto& h : {dst, src}) {
      if (!h || gpu != nullptr) continue;
      auto a = agents_.find(*h);
      if (a != agents_.end() && a->second.gpu >= 0) gpu = &a->second;
    }
    if (gpu == nullptr) {
      ++summary_.drops[dst || src ? "unknown_agent" : "bad_record"];
      return;
    }
    TraceEvent e;
    if (!Times(r, e)) return;
    e.cat = kNsysMemopCat;
    e.name = "Memcpy";
    e.args_device = gpu->gpu;
    e.has_args_device = true;
    const auto bytes = U64(r, "bytes");
    if (bytes && *bytes <= static_cast<uint64_t>(INT64_MAX)) {
      e.args_bytes = static_cast<int64_t>(*bytes);
    }
    Emit(e);
  }

  void Marker(element r) {
    element corr;
    uint64_t id = 0;
    if (r["correlation_id"].get(corr) != simdjson::SUCCESS ||
        corr["internal"].get_uint64().get(id) != simdjson::SUCCESS) {
      ++summary_.drops["bad_record"];
      return;
    }
    auto step = marker_steps_.find(id);
    auto rank = marker_ranks_.find(id);
    if (step == marker_steps_.end() && rank == marker_ranks_.end()) return;
    TraceEvent e;
    if (!Times(r, e)) return;
    if (rank != marker_ranks_.end()) {
      // The earliest range naming a rank gives the process's rank.
      auto [it, inserted] = rank_start_.try_emplace(pid_, e.ts_ps);
      if (inserted || e.ts_ps < it->second) {
        it->second = e.ts_ps;
        summary_.process_ranks[pid_] = rank->second;
      }
    }
    if (step == marker_steps_.end() || e.dur_ps == 0) return;  // a mark is no range
    const std::string number = std::to_string(step->second);
    e.cat = kNsysStepCat;
    e.name = number;
    Emit(e);
  }

  // The GPU agents that dispatched name the devices; the others are seen.
  void FinishProcess() {
    EmitRcclKernels();
    std::vector<const Agent*> gpus;
    for (const auto& [handle, a] : agents_) {
      if (a.gpu >= 0) gpus.push_back(&a);
    }
    std::sort(gpus.begin(), gpus.end(),
              [](const Agent* x, const Agent* y) { return x->gpu < y->gpu; });
    int64_t idle = summary_.idle_gpu_agents.value_or(0);
    for (const Agent* a : gpus) {
      if (a->dispatched) {
        summary_.device_names.push_back(a->product_name);
      } else {
        ++idle;
        if (summary_.idle_gpu_agent_names.size() < kMaxIdleGpuAgentNames) {
          summary_.idle_gpu_agent_names.push_back(IdleGpuAgentName(pid_, a->gpu, a->product_name));
        }
      }
    }
    summary_.idle_gpu_agents = idle;
  }

  Stream in_;
  EventSink& sink_;
  size_t max_record_;
  simdjson::dom::parser json_;
  ParseSummary summary_;
  int64_t pid_ = 0;
  std::optional<int64_t> base_ns_;
  int64_t rel_end_ = 0;
  std::map<uint64_t, Agent> agents_;  // by handle
  std::unordered_map<uint64_t, std::string> symbols_;
  size_t symbol_bytes_ = 0;
  std::map<std::pair<uint64_t, uint64_t>, int64_t> queues_;            // (agent, queue) -> number
  std::unordered_map<uint64_t, int64_t> marker_steps_, marker_ranks_;  // by correlation id
  std::map<int64_t, int64_t> rank_start_;                              // pid -> earliest rank ts
  struct Held {
    TraceEvent e;
    uint64_t thread = 0;
    uint64_t corr = 0;
  };
  std::vector<std::string> rccl_ops_;  // RCCL_API operation names by number
  std::map<uint64_t, std::map<uint64_t, uint32_t>> rccl_calls_;  // thread -> corr -> op
  size_t rccl_call_count_ = 0;
  std::vector<Held> held_;  // RCCL kernels awaiting their collective
};

}  // namespace rocprof_json
}  // namespace

std::string IdleGpuAgentName(int64_t pid, int64_t gpu, std::string_view product_name) {
  std::string out = "pid " + std::to_string(pid) + " GPU " + std::to_string(gpu);
  if (!product_name.empty()) out += " (" + std::string(product_name.substr(0, 256)) + ")";
  return out;
}

bool IsRcclKernelName(std::string_view name) {
  return name.starts_with("ncclDevKernel") || name.starts_with("ncclKernel");
}

bool IsRcclCollectiveOperation(std::string_view op) {
  if (!op.starts_with("nccl")) return false;
  op.remove_prefix(4);
  for (std::string_view kind :
       {"AllReduce", "AllGather", "ReduceScatter", "AllToAll", "Alltoall", "Send", "Recv",
        "Broadcast", "Bcast", "Reduce", "Gather", "Scatter"}) {
    if (op.starts_with(kind)) return true;
  }
  return false;
}

bool LooksLikeRocprofJson(std::string_view head) {
  size_t i = 0;
  if (head.substr(0, 3) == "\xEF\xBB\xBF") i = 3;
  auto skip = [&] {
    while (i < head.size() && rocprof_json::IsJsonSpace(head[i])) ++i;
  };
  skip();
  if (i >= head.size() || head[i] != '{') return false;
  ++i;
  skip();
  return head.substr(i).starts_with("\"" + std::string(kRocprofKey) + "\"");
}

Result<ParseSummary> ReadRocprofJson(read::ByteSource& source, EventSink& sink,
                                     const RocprofOptions& options) {
  rocprof_json::Reader reader(source, sink, options);
  return reader.Run();
}

}  // namespace profwatch::parse
