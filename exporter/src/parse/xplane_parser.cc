// Wire-format XSpace reader. Field numbers follow tsl/profiler/protobuf/
// xplane.proto (see ../shared/docs/trace-formats.md §2). The top level is
// pulled from the ByteSource one plane at a time; a plane is decoded in
// memory because its event metadata (field 4) is serialised after its lines
// (field 3), so names are only known once the whole plane is present.
#include "parse/xplane_parser.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "parse/proto_wire.h"

namespace profwatch::parse {
namespace {

using wire::Cursor;
using wire::kLen;
using wire::kVarint;
using wire::Num;

struct EventMetadata {
  std::string_view name;
  std::string_view display_name;
};

// map<int64, XEventMetadata> of one plane. Ids are small dense integers in
// every writer we know, so a vector indexed by id is the fast path; sparse or
// negative ids fall back to a sorted vector.
class MetadataTable {
 public:
  void Clear() {
    entries_.clear();
    dense_.clear();
    present_.clear();
    use_dense_ = false;
  }
  void Add(int64_t id, EventMetadata md) { entries_.emplace_back(id, md); }

  void Finish() {
    // Later map entries with the same key win (protobuf map semantics):
    // stable sort keeps file order among equal keys, so take the last.
    int64_t max_id = -1;
    bool nonneg = true;
    for (const auto& [id, md] : entries_) {
      if (id < 0) nonneg = false;
      max_id = std::max(max_id, id);
    }
    use_dense_ = nonneg && max_id < static_cast<int64_t>(4 * entries_.size() + 1024);
    if (use_dense_) {
      dense_.assign(static_cast<size_t>(max_id + 1), EventMetadata{});
      present_.assign(static_cast<size_t>(max_id + 1), 0);
      for (const auto& [id, md] : entries_) {
        dense_[static_cast<size_t>(id)] = md;
        present_[static_cast<size_t>(id)] = 1;
      }
      return;
    }
    std::stable_sort(entries_.begin(), entries_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    // Keep the last of each run of equal ids.
    size_t out = 0;
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (i + 1 < entries_.size() && entries_[i + 1].first == entries_[i].first) continue;
      entries_[out++] = entries_[i];
    }
    entries_.resize(out);
  }

  const EventMetadata* Find(int64_t id) const {
    if (use_dense_) {
      if (id < 0 || static_cast<uint64_t>(id) >= dense_.size()) return nullptr;
      return present_[static_cast<size_t>(id)] ? &dense_[static_cast<size_t>(id)] : nullptr;
    }
    auto it = std::lower_bound(entries_.begin(), entries_.end(), id,
                               [](const auto& e, int64_t v) { return e.first < v; });
    if (it == entries_.end() || it->first != id) return nullptr;
    return &it->second;
  }

 private:
  std::vector<std::pair<int64_t, EventMetadata>> entries_;
  std::vector<EventMetadata> dense_;
  std::vector<uint8_t> present_;
  bool use_dense_ = false;
};

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

enum class PlaneKind { kDevice, kHost, kOther };

PlaneKind KindOf(std::string_view name) {
  if (StartsWith(name, "/device:GPU:") || StartsWith(name, "/device:TPU:")) {
    return PlaneKind::kDevice;
  }
  if (name == "/host:CPU") return PlaneKind::kHost;
  return PlaneKind::kOther;
}

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// ---- The XSpace messages the readers share, one decoder each. Each reads
// the fields it names (a wrong wire type is an error naming the field) and
// skips the others.

// A map<int64, message> entry: key = 1, value = 2 (the value's bytes).
bool ReadMapEntry(Cursor& c, int64_t* key, std::string_view* value) {
  return c.Fields([&](uint32_t f, uint32_t wt) {
    if (f == 1) return c.Int(wt, "map key", key);
    if (f == 2) return c.String(wt, "map value", value);
    return c.Skip(wt);
  });
}

// A map<int64, XStatMetadata> entry: its key and the metadata's name = 2.
bool ReadStatName(Cursor& c, int64_t* key, std::string_view* name) {
  std::string_view value;
  if (!ReadMapEntry(c, key, &value)) return false;
  Cursor m(value);
  const bool ok = m.Fields([&](uint32_t f, uint32_t wt) {
    return f == 2 ? m.String(wt, "XStatMetadata.name", name) : m.Skip(wt);
  });
  return ok || c.Fail(m.error());
}

// XStat: metadata_id = 1, str_value = 5, bytes_value = 6, ref_value = 7 (a
// reference to a stat metadata, whose name is the value). The numeric
// values are skipped. An id that is absent is -1: it names no stat.
struct Stat {
  int64_t metadata_id = -1;
  std::string_view str;
  std::string_view bytes;
  bool has_bytes = false;
  int64_t ref = -1;
};

// ReadStat and ReadEvent run per event: they and their field lambdas are
// inlined into the event loop (GCC keeps the lambdas out of line otherwise).
[[gnu::always_inline]] inline bool ReadStat(Cursor& c, Stat* stat) {
  return c.Fields([&](uint32_t f, uint32_t wt) __attribute__((always_inline)) {
    switch (f) {
      case 1:
        return c.Int(wt, "XStat.metadata_id", &stat->metadata_id);
      case 5:
        return c.String(wt, "XStat.str_value", &stat->str);
      case 6:
        stat->has_bytes = true;
        return c.String(wt, "XStat.bytes_value", &stat->bytes);
      case 7:
        return c.Int(wt, "XStat.ref_value", &stat->ref);
      default:
        return c.Skip(wt);
    }
  });
}

// XEventMetadata: id = 1, name = 2, display_name = 4, stats = 5, each stat
// handed to on_stat(cursor, wire_type), which reads or skips it.
template <typename OnStat>
bool ReadEventMetadata(Cursor& c, EventMetadata* md, OnStat&& on_stat) {
  return c.Fields([&](uint32_t f, uint32_t wt) {
    uint64_t id = 0;
    switch (f) {
      case 1:
        return c.Uint(wt, "XEventMetadata.id", &id);
      case 2:
        return c.String(wt, "XEventMetadata.name", &md->name);
      case 4:
        return c.String(wt, "XEventMetadata.display_name", &md->display_name);
      case 5:
        return on_stat(c, wt);
      default:  // metadata bytes, child_id (packed or not)
        return c.Skip(wt);
    }
  });
}

// The device name a plane stat carries: the str_value of a stat whose
// metadata is named "gpu_device_name"; empty for any other stat.
template <typename StatNames>
std::string_view DeviceNameOf(int64_t metadata_id, std::string_view str, const StatNames& names) {
  auto it = names.find(metadata_id);
  if (it == names.end() || it->second != "gpu_device_name") return {};
  return str;
}

// XLine: id = 1, name = 2, timestamp_ns = 3, events = 4 (counted here,
// decoded by the emitting pass), display_id = 10, display_name = 11.
struct LineHead {
  int64_t id = 0;
  int64_t display_id = 0;
  int64_t timestamp_ns = 0;
  std::string_view name;
  std::string_view display_name;
  uint64_t events = 0;
};

bool ReadLineHead(Cursor& c, LineHead* line) {
  return c.Fields([&](uint32_t f, uint32_t wt) {
    switch (f) {
      case 1:
        return c.Int(wt, "XLine.id", &line->id);
      case 2:
        return c.String(wt, "XLine.name", &line->name);
      case 3:
        return c.Int(wt, "XLine.timestamp_ns", &line->timestamp_ns);
      case 4:
        ++line->events;
        return c.Expect(wt, kLen, "XLine.events") && c.Skip(wt);
      case 10:
        return c.Int(wt, "XLine.display_id", &line->display_id);
      case 11:
        return c.String(wt, "XLine.display_name", &line->display_name);
      default:
        return c.Skip(wt);
    }
  });
}

// XEvent: metadata_id = 1, offset_ps = 2 | num_occurrences = 5 (a oneof: the
// last one set wins), duration_ps = 3, stats = 4 (read by the caller's
// on_stat(cursor, wire_type) when `stats`, else skipped).
struct EventFields {
  int64_t metadata_id = 0;
  int64_t offset_ps = 0;
  int64_t duration_ps = 0;
  bool aggregated = false;  // num_occurrences set: no start time
  std::string_view scope;   // stat "name"
  std::string_view module;  // stat "hlo_module"
  std::string_view op;      // stat "hlo_op"
};

template <typename OnStat>
[[gnu::always_inline]] inline bool ReadEvent(Cursor& c, bool stats, EventFields* ev,
                                             OnStat&& on_stat) {
  return c.Fields([&](uint32_t f, uint32_t wt) __attribute__((always_inline)) {
    uint64_t occurrences = 0;
    switch (f) {
      case 1:
        return c.Int(wt, "XEvent.metadata_id", &ev->metadata_id);
      case 2:
        ev->aggregated = false;
        return c.Int(wt, "XEvent.offset_ps", &ev->offset_ps);
      case 3:
        return c.Int(wt, "XEvent.duration_ps", &ev->duration_ps);
      case 4:
        return stats ? on_stat(c, wt) : c.Skip(wt);
      case 5:
        ev->aggregated = true;
        return c.Uint(wt, "XEvent.num_occurrences", &occurrences);
      default:
        return c.Skip(wt);
    }
  });
}

// ---- The top level of an XSpace, pulled from its source: planes = 1;
// errors = 2, warnings = 3, hostnames = 4 are skipped, as are unknown
// fields.

struct PlaneAt {
  uint64_t at = 0;     // offset of the plane's tag
  uint64_t bytes = 0;  // its length (the bytes follow, unread)
};

// The next plane of the XSpace, its length read and its bytes not; nullopt
// at the end of the input.
Result<std::optional<PlaneAt>> NextPlane(wire::Stream& in) {
  auto corrupt = [](uint64_t at, const std::string& what) {
    return MakeError(ErrorCode::kCorrupt,
                     "not an XSpace protobuf: byte " + Num(at) + ": " + std::string(what));
  };
  while (true) {
    auto tag = in.Tag();
    if (!tag) return tl::unexpected(tag.error());
    if (!tag->has_value()) return std::optional<PlaneAt>();
    const wire::StreamTag t = **tag;
    if (t.field == 0 || t.field > kMaxFieldNumber) {
      return corrupt(t.at, "invalid field number " + Num(t.field));
    }
    if (t.field <= 4 && t.wire_type != kLen) {
      return corrupt(
          t.at, "field " + Num(t.field) + " has wire type " + Num(t.wire_type) + ", expected 2");
    }
    if (t.field == 1) {
      auto n = in.Varint("a length prefix");
      if (!n) return tl::unexpected(n.error());
      return std::optional<PlaneAt>(PlaneAt{t.at, *n});
    }
    if (auto s = in.SkipValue(t); !s) {
      Error e = s.error();
      if (e.code == ErrorCode::kCorrupt) e.Wrap("not an XSpace protobuf");
      return tl::unexpected(std::move(e));
    }
  }
}

// A plane's bytes in one buffer (a view into the read buffer or into
// `scratch`); kTooLarge before anything is read when it claims more than
// `max_bytes`. `what` names the plane in errors.
Result<std::string_view> ReadPlane(wire::Stream& in, const PlaneAt& plane, uint64_t max_bytes,
                                   std::string& scratch, const std::string& what) {
  if (plane.bytes > max_bytes) {
    return MakeError(ErrorCode::kTooLarge, what + " at byte " + Num(plane.at) + " claims " +
                                               Num(plane.bytes) + " bytes, above the " +
                                               Num(max_bytes) + "-byte plane limit");
  }
  return in.Bytes(plane.bytes, scratch, what);
}

// Names formats that users feed by mistake, for a clear error.
std::string ForeignFormat(std::string_view head) {
  size_t i = 0;
  while (i < head.size() &&
         (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t'))
    ++i;
  if (i < head.size() && (head[i] == '{' || head[i] == '[')) return "the content is JSON";
  if (head.size() >= 2 && static_cast<uint8_t>(head[0]) == 0x1f &&
      static_cast<uint8_t>(head[1]) == 0x8b) {
    return "the content is gzip-compressed";
  }
  return "";
}

Status Corrupt(const Cursor& c, std::string_view where) {
  return MakeError(ErrorCode::kCorrupt, std::string(where) + ": " + c.error());
}

// XPlane: id = 1, name = 2, lines = 3, event_metadata = 4, stat_metadata = 5,
// stats = 6.
struct PlaneHead {
  int64_t id = 0;
  std::string_view name;
};

class XPlaneParser final : public TraceParser {
 public:
  XPlaneParser(ParseOptions options, XPlaneOptions xplane) : options_(options), xplane_(xplane) {}

  Result<ParseSummary> Parse(read::ByteSource& source, EventSink& sink) override {
    ParseSummary summary;
    summary.schema = TraceSchema::kXPlane;
    summary_ = &summary;
    sink_ = &sink;
    base_set_ = false;
    auto status = ParseSpace(source, summary);
    // A huge plane must not pin its buffer while the worker idles.
    if (scratch_.capacity() > (size_t{16} << 20)) std::string().swap(scratch_);
    summary_ = nullptr;
    sink_ = nullptr;
    if (!status) return tl::unexpected(status.error());
    return summary;
  }

 private:
  Status ParseSpace(read::ByteSource& source, ParseSummary& summary) {
    wire::Stream in(source, options_.chunk_bytes, chunk_);
    auto more = in.Fill();
    if (!more) return tl::unexpected(more.error());
    if (!*more) return MakeError(ErrorCode::kTruncated, "empty input: no XSpace bytes");
    if (auto why = ForeignFormat(in.Peek()); !why.empty()) {
      return MakeError(ErrorCode::kCorrupt, "not an XSpace protobuf: " + why);
    }
    uint64_t planes = 0;
    while (true) {
      auto plane = NextPlane(in);
      if (!plane) return tl::unexpected(plane.error());
      if (!plane->has_value()) break;
      const std::string what = "plane " + Num(planes);
      auto bytes = ReadPlane(in, **plane, xplane_.max_plane_bytes, scratch_, what);
      if (!bytes) return tl::unexpected(bytes.error());
      if (auto s = DecodePlane(*bytes); !s) {
        Error e = s.error();
        e.Wrap(what + " at byte " + Num((*plane)->at));
        return tl::unexpected(std::move(e));
      }
      ++planes;
      summary.has_trace_events = true;
    }
    summary.json_bytes = in.Consumed();
    if (planes == 0) {
      return MakeError(ErrorCode::kUnsupported, "protobuf message without any XPlane");
    }
    return {};
  }

  Status DecodePlane(std::string_view bytes) {
    PlaneHead plane;
    if (auto s = ReadPlaneFields(bytes, &plane); !s) return s;
    const PlaneKind kind = KindOf(plane.name);
    if (kind == PlaneKind::kDevice) {
      if (auto s = CollectDeviceNames(); !s) return s;
    }
    FindEventStats();
    return EmitPlane(plane, kind);
  }

  // Reads the plane's fields into `plane` and this plane's tables: its
  // lines (bytes, for EmitPlane), event metadata, stat metadata and stats.
  Status ReadPlaneFields(std::string_view bytes, PlaneHead* plane) {
    lines_.clear();
    metadata_.Clear();
    stat_names_.clear();
    plane_stats_.clear();
    Cursor c(bytes);
    bool known = false;
    while (!c.Done()) {
      uint32_t f = 0, wt = 0;
      if (!c.Tag(&f, &wt)) return Corrupt(c, "plane");
      std::string_view v;
      bool ok = true;
      known = known || (f >= 1 && f <= 6);
      switch (f) {
        case 1:
          ok = c.Int(wt, "XPlane.id", &plane->id);
          break;
        case 2:
          ok = c.String(wt, "XPlane.name", &plane->name);
          break;
        case 3:
          ok = c.String(wt, "XPlane.lines", &v);
          lines_.push_back(v);
          break;
        case 4:
          if (!c.String(wt, "XPlane.event_metadata", &v)) return Corrupt(c, "plane");
          if (auto s = DecodeMetadataEntry(v); !s) return s;
          break;
        case 5: {  // map<int64, XStatMetadata>: the name a stat id stands for
          int64_t key = 0;
          ok = c.Message(wt, "XPlane.stat_metadata",
                         [&](Cursor& e) { return ReadStatName(e, &key, &v); });
          if (ok) stat_names_[key] = v;  // a later entry with the same key wins
          break;
        }
        case 6:
          ok = c.String(wt, "XPlane.stats", &v);
          plane_stats_.push_back(v);
          break;
        default:
          ok = c.Skip(wt);
      }
      if (!ok) return Corrupt(c, "plane");
    }
    if (!known && !bytes.empty()) {
      return MakeError(ErrorCode::kCorrupt, "not an XPlane: none of its fields are present");
    }
    metadata_.Finish();
    return {};
  }

  // map<int64, XEventMetadata> entry: an event's name by its metadata id.
  Status DecodeMetadataEntry(std::string_view entry) {
    Cursor c(entry);
    int64_t key = 0;
    std::string_view value;
    if (!ReadMapEntry(c, &key, &value)) return Corrupt(c, "event metadata entry");
    EventMetadata md;
    Cursor v(value);
    if (!ReadEventMetadata(v, &md, [](Cursor& s, uint32_t wt) { return s.Skip(wt); })) {
      return Corrupt(v, "event metadata " + Num(static_cast<uint64_t>(key)));
    }
    metadata_.Add(key, md);
    return {};
  }

  // A device plane names its device (stat gpu_device_name): the peak for MFU.
  Status CollectDeviceNames() {
    for (std::string_view bytes : plane_stats_) {
      Cursor c(bytes);
      Stat stat;
      if (!ReadStat(c, &stat)) return Corrupt(c, "plane stat");
      if (auto name = DeviceNameOf(stat.metadata_id, stat.str, stat_names_); !name.empty()) {
        summary_->device_names.emplace_back(name);
      }
    }
    return {};
  }

  // The ids of the stats an event carries into its TraceEvent, where this
  // plane has them: "name" (the JAX scope, args.name in the JSON the
  // converter writes), "hlo_module" and "hlo_op".
  void FindEventStats() {
    scope_stat_.reset();
    module_stat_.reset();
    op_stat_.reset();
    for (const auto& [stat_id, stat_name] : stat_names_) {
      if (stat_name == "name") scope_stat_ = stat_id;
      if (stat_name == "hlo_module") module_stat_ = stat_id;
      if (stat_name == "hlo_op") op_stat_ = stat_id;
    }
  }

  // The process_name event of an emitted plane, then each line's events.
  Status EmitPlane(const PlaneHead& plane, PlaneKind kind) {
    const bool emit =
        kind == PlaneKind::kDevice || (kind == PlaneKind::kHost && xplane_.host_events);
    int64_t pid = kXPlaneHostPid;
    if (kind == PlaneKind::kDevice && __builtin_add_overflow(plane.id, int64_t{1}, &pid)) {
      return MakeError(
          ErrorCode::kCorrupt,
          "device plane id " + Num(static_cast<uint64_t>(plane.id)) + " overflows a pid");
    }
    if (emit) {
      TraceEvent m;
      m.ph = 'M';
      m.has_name = true;
      m.name = "process_name";
      m.pid = Id{IdKind::kInt, pid, {}};
      m.args_name = plane.name;
      Emit(m);
    }
    const char* skip_reason = kind == PlaneKind::kHost ? "host_plane" : "other_plane";
    for (size_t i = 0; i < lines_.size(); ++i) {
      if (auto s = DecodeLine(lines_[i], emit, pid, skip_reason); !s) {
        Error e = s.error();
        e.Wrap("line " + Num(i));
        return tl::unexpected(std::move(e));
      }
    }
    return {};
  }

  Status DecodeLine(std::string_view bytes, bool emit, int64_t pid, const char* skip_reason) {
    Cursor c(bytes);
    LineHead line;
    if (!ReadLineHead(c, &line)) return Corrupt(c, "line");
    if (!emit) {
      if (line.events > 0) summary_->drops[skip_reason] += line.events;
      return {};
    }
    if (!base_set_) SetTimeBase(line.timestamp_ns);
    // (timestamp_ns - base) * 1000 in int64; a line too far from the base
    // loses its events (counted) rather than wrapping around.
    int64_t line_ps = 0;
    const bool line_ok = !__builtin_sub_overflow(line.timestamp_ns, base_ns_, &line_ps) &&
                         !__builtin_mul_overflow(line_ps, int64_t{1000}, &line_ps);

    TraceEvent m;
    m.ph = 'M';
    m.has_name = true;
    m.name = "thread_name";
    m.pid = Id{IdKind::kInt, pid, {}};
    // XLA's trace_viewer resource id is a uint32.
    const uint32_t tid = static_cast<uint32_t>(line.display_id != 0 ? line.display_id : line.id);
    m.tid = Id{IdKind::kInt, static_cast<int64_t>(tid), {}};
    m.args_name = line.display_name.empty() ? line.name : line.display_name;
    Emit(m);
    return EmitEvents(bytes, m, line_ok ? std::optional<int64_t>(line_ps) : std::nullopt);
  }

  // The time base is the first emitted line's timestamp_ns / 1000, floored
  // (ParseSummary::time_base_us).
  void SetTimeBase(int64_t timestamp_ns) {
    base_us_ = FloorDiv(timestamp_ns, 1000);
    // Near INT64_MIN the floor times 1000 does not fit: truncate instead.
    if (__builtin_mul_overflow(base_us_, int64_t{1000}, &base_ns_)) {
      base_us_ = timestamp_ns / 1000;
      base_ns_ = base_us_ * 1000;
    }
    base_set_ = true;
    summary_->time_base_us = base_us_;
  }

  // One X event per event of the line (its events = 4, in file order) on the
  // thread of `thread`; `line_ps`: the line's start relative to the time
  // base, absent when it does not fit (its events are dropped as
  // time_overflow).
  Status EmitEvents(std::string_view bytes, const TraceEvent& thread,
                    std::optional<int64_t> line_ps) {
    TraceEvent x;
    x.ph = 'X';
    x.pid = thread.pid;
    x.tid = thread.tid;
    x.has_dur = true;
    x.dur_exact = true;
    const bool stats = scope_stat_ || module_stat_ || op_stat_;
    Cursor c(bytes);
    while (!c.Done()) {
      uint32_t f = 0, wt = 0;
      std::string_view bytes_of_event;
      if (!c.Tag(&f, &wt)) return Corrupt(c, "line");
      if (f != 4) {
        if (!c.Skip(wt)) return Corrupt(c, "line");
        continue;
      }
      if (!c.Bytes(&bytes_of_event)) return Corrupt(c, "line");
      Cursor e(bytes_of_event);
      EventFields ev;
      const bool ok = ReadEvent(e, stats, &ev,
                                [&](Cursor& ec, uint32_t ewt) { return TakeStat(ec, ewt, &ev); });
      if (!ok) return Corrupt(e, "event");
      EmitEvent(ev, line_ps, x);
    }
    return {};
  }

  // An event's stat (XEvent.stats, the next field of `event`) that is its
  // scope, module or HLO instruction sets that field of `ev`: its str_value,
  // or the name of the stat metadata its ref_value points at. Other stats
  // are read and ignored. An error inside the stat is `event`'s.
  [[gnu::always_inline]] bool TakeStat(Cursor& event, uint32_t wire_type, EventFields* ev) {
    std::string_view bytes;
    if (!event.String(wire_type, "XEvent.stats", &bytes)) return false;
    Cursor c(bytes);
    Stat stat;
    if (!ReadStat(c, &stat)) return event.Fail(c.error());
    std::string_view* out = nullptr;
    if (scope_stat_ && stat.metadata_id == *scope_stat_) out = &ev->scope;
    if (module_stat_ && stat.metadata_id == *module_stat_) out = &ev->module;
    if (op_stat_ && stat.metadata_id == *op_stat_) out = &ev->op;
    if (out == nullptr) return true;
    if (!stat.str.empty()) {
      *out = stat.str;
    } else if (auto it = stat_names_.find(stat.ref); it != stat_names_.end()) {
      *out = it->second;
    }
    return true;
  }

  // Emits one decoded event through `x` (the line's X event, reused), or
  // counts why it has no start time.
  void EmitEvent(const EventFields& ev, std::optional<int64_t> line_ps, TraceEvent& x) {
    if (ev.aggregated) {
      ++summary_->drops["aggregated_event"];
      return;
    }
    int64_t ts_ps = 0;
    if (!line_ps || __builtin_add_overflow(*line_ps, ev.offset_ps, &ts_ps)) {
      ++summary_->drops["time_overflow"];
      return;
    }
    const EventMetadata* md = metadata_.Find(ev.metadata_id);
    x.has_name = md != nullptr;
    x.name = md == nullptr ? std::string_view()
                           : (md->display_name.empty() ? md->name : md->display_name);
    x.args_name = ev.scope;
    x.args_hlo_module = ev.module;
    x.args_hlo_op = ev.op;
    x.has_ts = true;
    x.ts_ps = ts_ps;
    x.dur_ps = ev.duration_ps;
    x.dur_us = static_cast<double>(ev.duration_ps) / 1e6;
    Emit(x);
  }

  void Emit(const TraceEvent& e) {
    ++summary_->events;
    sink_->OnEvent(e);
  }

  ParseOptions options_;
  XPlaneOptions xplane_;
  // Reused between planes and files.
  std::vector<char> chunk_;
  std::string scratch_;
  std::vector<std::string_view> lines_;
  MetadataTable metadata_;
  std::unordered_map<int64_t, std::string_view> stat_names_;  // this plane's stat metadata
  std::optional<int64_t> scope_stat_;                         // the id of the "name" stat
  std::optional<int64_t> module_stat_;                        // the id of "hlo_module"
  std::optional<int64_t> op_stat_;                            // the id of "hlo_op"
  std::vector<std::string_view> plane_stats_;                 // this plane's XPlane.stats
  // Per parse.
  ParseSummary* summary_ = nullptr;
  EventSink* sink_ = nullptr;
  bool base_set_ = false;
  int64_t base_us_ = 0;
  int64_t base_ns_ = 0;
};

// ---- The HLO modules of the "/host:metadata" plane.

// The name of a plane from the first bytes of its message (id = 1 and
// name = 2 come first in every writer's field order); nullopt when they are
// not there.
std::optional<std::string_view> PlaneNameFromHead(std::string_view head) {
  Cursor c(head);
  while (!c.Done()) {
    uint32_t f = 0, wt = 0;
    if (!c.Tag(&f, &wt)) return std::nullopt;
    if (f == 2 && wt == kLen) {
      std::string_view name;
      if (!c.Bytes(&name)) return std::nullopt;
      return name;
    }
    if (f != 1 || !c.Skip(wt)) return std::nullopt;
  }
  return std::nullopt;
}

// What the modules are read from: the plane's event metadata (XEventMetadata
// messages) and the id of its "Hlo Proto" stat, if it has one.
struct MetadataPlane {
  std::vector<std::string_view> events;
  std::optional<int64_t> hlo_stat;
};

Status ReadMetadataPlane(std::string_view plane, MetadataPlane* out) {
  Cursor c(plane);
  const bool ok = c.Fields([&](uint32_t f, uint32_t wt) {
    if (f != 4 && f != 5) return c.Skip(wt);
    return c.Message(wt, "map entry", [&](Cursor& e) {
      int64_t key = 0;
      std::string_view value;
      if (f == 4) {
        if (!ReadMapEntry(e, &key, &value)) return false;
        out->events.push_back(value);
        return true;
      }
      if (!ReadStatName(e, &key, &value)) return false;
      if (value == "Hlo Proto") out->hlo_stat = key;
      return true;
    });
  });
  if (!ok) return MakeError(ErrorCode::kCorrupt, "metadata plane: " + c.error());
  return {};
}

// The bytes_value of every "Hlo Proto" stat (a serialised HloModuleProto),
// in file order. REQUIRES: plane.hlo_stat.
Result<std::vector<std::string_view>> ModuleProtos(const MetadataPlane& plane) {
  std::vector<std::string_view> protos;
  for (std::string_view event : plane.events) {
    Cursor m(event);
    EventMetadata md;
    const bool ok = ReadEventMetadata(m, &md, [&](Cursor& c, uint32_t wt) {
      return c.Message(wt, "XEventMetadata.stats", [&](Cursor& s) {
        Stat stat;
        if (!ReadStat(s, &stat)) return false;
        if (stat.has_bytes && stat.metadata_id == *plane.hlo_stat) protos.push_back(stat.bytes);
        return true;
      });
    });
    if (!ok) return MakeError(ErrorCode::kCorrupt, "event metadata: " + m.error());
  }
  return protos;
}

// Decodes the modules into `index`: each within HloLimits, all of them
// together within the per-file share of inlined schedule entries (what
// their kept launches and the expansion work add up to, however many
// modules the plane holds). A module that fails to decode is listed in
// index.errors; a name that two modules share is ambiguous, neither kept.
void AddModules(const std::vector<std::string_view>& protos, HloIndex& index) {
  std::map<std::string, int> seen;  // module name -> count
  const HloLimits per_module;
  size_t expanded_left = kMaxHloExpandedPerFile;
  for (std::string_view bytes : protos) {
    HloLimits limits = per_module;
    limits.max_expanded = std::min(per_module.max_expanded, expanded_left);
    auto module = DecodeHloProto(bytes, false, limits);
    if (!module) {
      index.errors.push_back(module.error().ToString());
      continue;
    }
    expanded_left -= std::min(expanded_left, module->cost.expanded);
    if (!module->too_complex.empty() && limits.max_expanded < per_module.max_expanded &&
        module->cost.expanded > limits.max_expanded) {
      module->too_complex = "too_complex: the file's modules together have more than " +
                            std::to_string(kMaxHloExpandedPerFile) +
                            " schedule entries with calls inlined";
    }
    if (++seen[module->name] > 1) continue;
    std::string name = module->name;
    if (!module->too_complex.empty()) {
      index.too_complex.emplace(std::move(name), std::move(module->too_complex));
      continue;
    }
    index.modules.emplace(std::move(name), std::move(*module));
  }
  for (const auto& [name, count] : seen) {
    if (count > 1) {
      index.modules.erase(name);
      index.too_complex.erase(name);
      index.ambiguous.push_back(name);
    }
  }
}

// Decodes the "/host:metadata" plane's modules into `index`.
Status DecodeMetadataPlane(std::string_view bytes, HloIndex& index) {
  MetadataPlane plane;
  if (auto s = ReadMetadataPlane(bytes, &plane); !s) return s;
  if (!plane.hlo_stat) return {};
  auto protos = ModuleProtos(plane);
  if (!protos) return tl::unexpected(protos.error());
  AddModules(*protos, index);
  return {};
}

// The plane's name from the bytes already read, without consuming them;
// nullopt when they do not show it. A copy: reading on refills the buffer.
Result<std::optional<std::string>> PeekPlaneName(wire::Stream& in, const PlaneAt& plane) {
  if (auto fill = in.Fill(); !fill) return tl::unexpected(fill.error());
  std::string_view head = in.Peek();
  if (head.size() > plane.bytes) head = head.substr(0, static_cast<size_t>(plane.bytes));
  if (auto name = PlaneNameFromHead(head)) return std::optional<std::string>(std::string(*name));
  return std::optional<std::string>();
}

// ---- The device name of an XSpace, read plane field by plane field.

// The device names of one plane (its bytes not read yet): only a device
// plane's name, stat metadata and stats are read, each within
// `max_field_bytes`; the rest is skipped unread.
Result<std::vector<std::string>> DeviceNamesOfPlane(wire::Stream& in, const PlaneAt& plane,
                                                    uint64_t max_field_bytes,
                                                    std::string& scratch) {
  auto corrupt = [&](const std::string& what) {
    return MakeError(ErrorCode::kCorrupt,
                     "not an XSpace protobuf: byte " + Num(in.Offset()) + ": " + what);
  };
  const uint64_t end = in.Offset() + plane.bytes;
  bool device = false;
  std::map<int64_t, std::string> stat_names;
  std::vector<std::pair<int64_t, std::string>> stats;  // metadata id, string value
  while (in.Offset() < end) {
    auto tag = in.Tag(/*at_eof_ok=*/false, "a plane field tag");
    if (!tag) return tl::unexpected(tag.error());
    const wire::StreamTag t = **tag;
    if (t.wire_type == kVarint) {
      if (auto v = in.Varint("a plane varint"); !v) return tl::unexpected(v.error());
      continue;
    }
    if (t.wire_type != kLen) return corrupt("plane field " + Num(t.field));
    auto n = in.Varint("a plane field length");
    if (!n) return tl::unexpected(n.error());
    if (in.Offset() + *n > end) return corrupt("a plane field runs past its plane");
    const bool wanted = t.field == 2 || (device && (t.field == 5 || t.field == 6));
    if (!wanted || *n > max_field_bytes) {
      if (auto s = in.Skip(*n, "plane field"); !s) return tl::unexpected(s.error());
      continue;
    }
    auto bytes = in.Bytes(*n, scratch, "plane field");
    if (!bytes) return tl::unexpected(bytes.error());
    Cursor c(*bytes);
    if (t.field == 2) {
      device = KindOf(*bytes) == PlaneKind::kDevice;
      if (!device) break;  // the rest of the plane is skipped below
    } else if (int64_t key = 0; t.field == 5) {
      std::string_view name;
      if (ReadStatName(c, &key, &name)) stat_names[key] = std::string(name);
    } else if (Stat stat; ReadStat(c, &stat) && !stat.str.empty()) {
      stats.emplace_back(stat.metadata_id, stat.str);
    }
  }
  if (in.Offset() < end) {
    if (auto s = in.Skip(end - in.Offset(), "plane"); !s) return tl::unexpected(s.error());
  }
  std::vector<std::string> names;
  for (const auto& [id, value] : stats) {
    if (auto name = DeviceNameOf(id, value, stat_names); !name.empty()) names.emplace_back(name);
  }
  return names;
}

}  // namespace

Result<HloIndex> ReadXPlaneHloModules(read::ByteSource& source, size_t chunk_bytes,
                                      size_t max_plane_bytes) {
  std::vector<char> chunk;
  std::string scratch;
  wire::Stream in(source, chunk_bytes, chunk);
  HloIndex index;
  while (true) {
    auto plane = NextPlane(in);
    if (!plane) return tl::unexpected(plane.error());
    if (!plane->has_value()) break;
    auto name = PeekPlaneName(in, **plane);
    if (!name) return tl::unexpected(name.error());
    if (*name && **name != "/host:metadata") {
      if (auto s = in.Skip((*plane)->bytes, "plane"); !s) return tl::unexpected(s.error());
      continue;
    }
    auto bytes = ReadPlane(in, **plane, max_plane_bytes, scratch, "plane");
    if (!bytes) return tl::unexpected(bytes.error());
    if (!*name && PlaneNameFromHead(*bytes) != "/host:metadata") continue;
    if (auto s = DecodeMetadataPlane(*bytes, index); !s) return tl::unexpected(s.error());
    if (index.modules.empty() && index.ambiguous.empty() && index.too_complex.empty()) break;
    return index;
  }
  if (!index.errors.empty()) {
    return MakeError(ErrorCode::kCorrupt, "no HLO module could be read: " + index.errors.front());
  }
  return MakeError(ErrorCode::kNotFound,
                   "no HLO modules (no /host:metadata plane with Hlo Proto stats)");
}

Result<std::vector<std::string>> ReadXPlaneDeviceNames(read::ByteSource& source,
                                                       size_t chunk_bytes) {
  std::vector<char> chunk;
  std::string scratch;
  wire::Stream in(source, chunk_bytes, chunk);
  while (true) {
    auto plane = NextPlane(in);
    if (!plane) return tl::unexpected(plane.error());
    if (!plane->has_value()) break;
    auto names = DeviceNamesOfPlane(in, **plane, kMaxDeviceNameFieldBytes, scratch);
    if (!names) return tl::unexpected(names.error());
    if (!names->empty()) return names;  // the process's GPUs are one kind
  }
  return std::vector<std::string>{};
}

std::unique_ptr<TraceParser> MakeXPlaneParser(ParseOptions options) {
  return MakeXPlaneParser(options, XPlaneOptions{});
}

std::unique_ptr<TraceParser> MakeXPlaneParser(ParseOptions options, XPlaneOptions xplane) {
  return std::make_unique<XPlaneParser>(options, xplane);
}

}  // namespace profwatch::parse
