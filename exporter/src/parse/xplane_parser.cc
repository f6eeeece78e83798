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
using wire::kFixed32;
using wire::kFixed64;
using wire::kLen;
using wire::kMaxFieldNumber;
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

// Pulls the top-level XSpace from the source: tags, lengths and whole planes.
class StreamReader {
 public:
  StreamReader(read::ByteSource& source, size_t chunk_bytes, std::vector<char>& buf)
      : source_(source), buf_(buf) {
    buf_.resize(std::max<size_t>(chunk_bytes, 64));
  }

  uint64_t Offset() const { return consumed_ - (end_ - pos_); }
  uint64_t Consumed() const { return consumed_; }
  // First bytes seen (for a clearer "this is JSON" message).
  std::string_view Peek() const { return std::string_view(buf_.data() + pos_, end_ - pos_); }

  // Fills the buffer if empty. Returns false at clean EOF.
  Result<bool> Fill() {
    if (pos_ < end_) return true;
    if (eof_) return false;
    auto n = source_.Read(buf_.data(), buf_.size());
    if (!n) return tl::unexpected(n.error());
    pos_ = 0;
    end_ = *n;
    consumed_ += *n;
    if (*n == 0) eof_ = true;
    return *n > 0;
  }

  // Reads a varint that may straddle reads. `at_eof_ok`: clean EOF before
  // its first byte returns nullopt (the end of the XSpace).
  Result<std::optional<uint64_t>> Varint(bool at_eof_ok, const char* what) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      auto more = Fill();
      if (!more) return tl::unexpected(more.error());
      if (!*more) {
        if (shift == 0 && at_eof_ok) return std::optional<uint64_t>();
        return MakeError(ErrorCode::kTruncated,
                         "byte " + Num(Offset()) + ": input ends inside " + what);
      }
      const uint8_t b = static_cast<uint8_t>(buf_[pos_++]);
      r |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return std::optional<uint64_t>(r);
    }
    return MakeError(ErrorCode::kCorrupt,
                     "byte " + Num(Offset()) + ": " + what + " is a varint longer than 10 bytes");
  }

  // Returns `n` bytes: a view into the read buffer when they are all there,
  // else a copy assembled in `scratch`. `scratch` grows with the bytes that
  // actually arrive (capped at `n`), so a lying length prefix costs no more
  // memory than the input really has.
  Result<std::string_view> Bytes(uint64_t n, std::string& scratch, const std::string& what) {
    if (n <= end_ - pos_) {
      std::string_view v(buf_.data() + pos_, static_cast<size_t>(n));
      pos_ += n;
      return v;
    }
    scratch.clear();
    const uint64_t start = Offset();
    while (scratch.size() < n) {
      auto more = Fill();
      if (!more) return tl::unexpected(more.error());
      if (!*more) {
        return MakeError(ErrorCode::kTruncated, what + " at byte " + Num(start) +
                                                    ": input ends after " + Num(scratch.size()) +
                                                    " of its " + Num(n) + " bytes");
      }
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n - scratch.size(), end_ - pos_));
      if (scratch.capacity() < scratch.size() + take) {
        const uint64_t want = std::max<uint64_t>(scratch.capacity() * 2, scratch.size() + take);
        scratch.reserve(static_cast<size_t>(std::min<uint64_t>(want, n)));
      }
      scratch.append(buf_.data() + pos_, take);
      pos_ += take;
    }
    return std::string_view(scratch);
  }

  Status Skip(uint64_t n, const std::string& what) {
    const uint64_t start = Offset();
    uint64_t left = n;
    while (left > 0) {
      auto more = Fill();
      if (!more) return tl::unexpected(more.error());
      if (!*more) {
        return MakeError(ErrorCode::kTruncated, what + " at byte " + Num(start) +
                                                    ": input ends after " + Num(n - left) +
                                                    " of its " + Num(n) + " bytes");
      }
      const size_t take = static_cast<size_t>(std::min<uint64_t>(left, end_ - pos_));
      pos_ += take;
      left -= take;
    }
    return {};
  }

 private:
  read::ByteSource& source_;
  std::vector<char>& buf_;
  size_t pos_ = 0;
  size_t end_ = 0;
  uint64_t consumed_ = 0;
  bool eof_ = false;
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
    StreamReader in(source, options_.chunk_bytes, chunk_);
    uint64_t planes = 0;
    bool first = true;
    while (true) {
      if (first) {
        auto more = in.Fill();
        if (!more) return tl::unexpected(more.error());
        if (!*more) return MakeError(ErrorCode::kTruncated, "empty input: no XSpace bytes");
        if (auto why = ForeignFormat(in.Peek()); !why.empty()) {
          return MakeError(ErrorCode::kCorrupt, "not an XSpace protobuf: " + why);
        }
        first = false;
      }
      const uint64_t tag_at = in.Offset();
      auto tag = in.Varint(/*at_eof_ok=*/true, "a field tag");
      if (!tag) return tl::unexpected(tag.error());
      if (!tag->has_value()) break;
      const uint64_t field = **tag >> 3;
      const uint32_t wire_type = static_cast<uint32_t>(**tag & 7);
      if (field == 0 || field > kMaxFieldNumber) {
        return MakeError(ErrorCode::kCorrupt, "not an XSpace protobuf: byte " + Num(tag_at) +
                                                  ": invalid field number " + Num(field));
      }
      if (field <= 4 && wire_type != kLen) {
        return MakeError(ErrorCode::kCorrupt, "not an XSpace protobuf: byte " + Num(tag_at) +
                                                  ": field " + Num(field) + " has wire type " +
                                                  Num(wire_type) + ", expected 2");
      }
      switch (wire_type) {
        case kVarint: {
          auto v = in.Varint(false, "a varint field");
          if (!v) return tl::unexpected(v.error());
          break;
        }
        case kFixed64:
        case kFixed32: {
          auto s = in.Skip(wire_type == kFixed64 ? 8 : 4, "fixed-width field " + Num(field));
          if (!s) return s;
          break;
        }
        case kLen: {
          auto len = in.Varint(false, "a length prefix");
          if (!len) return tl::unexpected(len.error());
          const uint64_t n = **len;
          if (field != 1) {
            auto s = in.Skip(n, "field " + Num(field));
            if (!s) return s;
            break;
          }
          const std::string what = "plane " + Num(planes);
          if (n > xplane_.max_plane_bytes) {
            return MakeError(ErrorCode::kTooLarge, what + " at byte " + Num(tag_at) + " claims " +
                                                       Num(n) + " bytes, above the " +
                                                       Num(xplane_.max_plane_bytes) +
                                                       "-byte plane limit");
          }
          auto bytes = in.Bytes(n, scratch_, what);
          if (!bytes) return tl::unexpected(bytes.error());
          auto s = DecodePlane(*bytes);
          if (!s) {
            Error e = s.error();
            e.Wrap(what + " at byte " + Num(tag_at));
            return tl::unexpected(std::move(e));
          }
          ++planes;
          summary.has_trace_events = true;
          break;
        }
        default:
          return MakeError(ErrorCode::kCorrupt, "not an XSpace protobuf: byte " + Num(tag_at) +
                                                    ": unsupported wire type " + Num(wire_type));
      }
    }
    summary.json_bytes = in.Consumed();
    if (planes == 0) {
      return MakeError(ErrorCode::kUnsupported, "protobuf message without any XPlane");
    }
    return {};
  }

  // Names formats that users feed by mistake, for a clear error.
  static std::string ForeignFormat(std::string_view head) {
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

  static Status Corrupt(const Cursor& c, std::string_view where) {
    return MakeError(ErrorCode::kCorrupt, std::string(where) + ": " + c.error());
  }

  Status DecodePlane(std::string_view bytes) {
    Cursor c(bytes);
    int64_t id = 0;
    std::string_view name;
    lines_.clear();
    metadata_.Clear();
    stat_names_.clear();
    plane_stats_.clear();
    bool known = false;
    while (!c.Done()) {
      uint32_t f = 0, wt = 0;
      if (!c.Tag(&f, &wt)) return Corrupt(c, "plane");
      switch (f) {
        case 1: {
          uint64_t v;
          if (!c.Expect(wt, kVarint, "XPlane.id") || !c.Varint(&v)) return Corrupt(c, "plane");
          id = static_cast<int64_t>(v);
          known = true;
          break;
        }
        case 2:
          if (!c.Expect(wt, kLen, "XPlane.name") || !c.Bytes(&name)) return Corrupt(c, "plane");
          known = true;
          break;
        case 3: {
          std::string_view line;
          if (!c.Expect(wt, kLen, "XPlane.lines") || !c.Bytes(&line)) return Corrupt(c, "plane");
          lines_.push_back(line);
          known = true;
          break;
        }
        case 4: {
          std::string_view entry;
          if (!c.Expect(wt, kLen, "XPlane.event_metadata") || !c.Bytes(&entry)) {
            return Corrupt(c, "plane");
          }
          if (auto s = DecodeMetadataEntry(entry); !s) return s;
          known = true;
          break;
        }
        case 5: {
          std::string_view entry;
          if (!c.Expect(wt, kLen, "XPlane.stat_metadata") || !c.Bytes(&entry)) {
            return Corrupt(c, "plane");
          }
          if (auto s = DecodeStatMetadataEntry(entry); !s) return s;
          known = true;
          break;
        }
        case 6: {
          std::string_view stat;
          if (!c.Expect(wt, kLen, "XPlane.stats") || !c.Bytes(&stat)) return Corrupt(c, "plane");
          plane_stats_.push_back(stat);
          known = true;
          break;
        }
        default:
          if (!c.Skip(wt)) return Corrupt(c, "plane");
      }
    }
    if (!known && !bytes.empty()) {
      return MakeError(ErrorCode::kCorrupt, "not an XPlane: none of its fields are present");
    }
    metadata_.Finish();
    // A device plane names its device (stat gpu_device_name): the peak for MFU.
    if (KindOf(name) == PlaneKind::kDevice) {
      for (std::string_view stat : plane_stats_) {
        Cursor sc(stat);
        uint64_t id = 0;
        std::string_view value;
        while (!sc.Done()) {
          uint32_t sf = 0, swt = 0;
          if (!sc.Tag(&sf, &swt)) return Corrupt(sc, "plane stat");
          const bool ok = sf == 1   ? sc.Expect(swt, kVarint, "XStat.metadata_id") && sc.Varint(&id)
                          : sf == 5 ? sc.Expect(swt, kLen, "XStat.str_value") && sc.Bytes(&value)
                                    : sc.Skip(swt);
          if (!ok) return Corrupt(sc, "plane stat");
        }
        auto it = stat_names_.find(static_cast<int64_t>(id));
        if (it != stat_names_.end() && it->second == "gpu_device_name" && !value.empty()) {
          summary_->device_names.emplace_back(value);
        }
      }
    }
    // The JAX scope of a kernel is its stat named "name" (args.name in the
    // JSON the converter writes): its id, if the plane has one.
    scope_stat_.reset();
    module_stat_.reset();
    for (const auto& [stat_id, stat_name] : stat_names_) {
      if (stat_name == "name") scope_stat_ = stat_id;
      if (stat_name == "hlo_module") module_stat_ = stat_id;
    }

    const PlaneKind kind = KindOf(name);
    bool emit = kind == PlaneKind::kDevice || (kind == PlaneKind::kHost && xplane_.host_events);
    int64_t pid = kXPlaneHostPid;
    if (kind == PlaneKind::kDevice) {
      if (__builtin_add_overflow(id, int64_t{1}, &pid)) {
        return MakeError(ErrorCode::kCorrupt,
                         "device plane id " + Num(static_cast<uint64_t>(id)) + " overflows a pid");
      }
    }
    if (emit) {
      TraceEvent m;
      m.ph = 'M';
      m.has_name = true;
      m.name = "process_name";
      m.pid = Id{IdKind::kInt, pid, {}};
      m.args_name = name;
      Emit(m);
    }
    const char* skip_reason = kind == PlaneKind::kHost ? "host_plane" : "other_plane";
    for (size_t i = 0; i < lines_.size(); ++i) {
      auto s = DecodeLine(lines_[i], emit, pid, skip_reason);
      if (!s) {
        Error e = s.error();
        e.Wrap("line " + Num(i));
        return tl::unexpected(std::move(e));
      }
    }
    return {};
  }

  // map<int64, XStatMetadata> entry: key 1, value 2 = XStatMetadata{id=1, name=2}.
  Status DecodeStatMetadataEntry(std::string_view entry) {
    Cursor c(entry);
    int64_t key = 0;
    std::string_view name;
    while (!c.Done()) {
      uint32_t f = 0, wt = 0;
      if (!c.Tag(&f, &wt)) return Corrupt(c, "stat metadata entry");
      bool ok = true;
      if (f == 1) {
        uint64_t v = 0;
        ok = c.Expect(wt, kVarint, "stat metadata key") && c.Varint(&v);
        key = static_cast<int64_t>(v);
      } else if (f == 2) {
        std::string_view value;
        ok = c.Expect(wt, kLen, "XStatMetadata") && c.Bytes(&value);
        Cursor m(value);
        while (ok && !m.Done()) {
          uint32_t mf = 0, mwt = 0;
          ok =
              m.Tag(&mf, &mwt) &&
              (mf == 2 ? m.Expect(mwt, kLen, "XStatMetadata.name") && m.Bytes(&name) : m.Skip(mwt));
        }
      } else {
        ok = c.Skip(wt);
      }
      if (!ok) return Corrupt(c, "stat metadata entry");
    }
    stat_names_[key] = name;  // a later entry with the same key wins
    return {};
  }

  // The scope (stat "name") or module (stat "hlo_module") carried by one
  // XStat: its str_value, or the name of the stat metadata its ref_value
  // points at. Neither is set when it is another stat.
  bool ScopeOfStat(std::string_view stat, std::string_view* scope, std::string_view* module) {
    Cursor c(stat);
    int64_t metadata_id = -1;
    std::string_view str;
    int64_t ref = -1;
    while (!c.Done()) {
      uint32_t f = 0, wt = 0;
      if (!c.Tag(&f, &wt)) return false;
      uint64_t v = 0;
      bool ok = true;
      if (f == 1) {
        ok = c.Expect(wt, kVarint, "XStat.metadata_id") && c.Varint(&v);
        metadata_id = static_cast<int64_t>(v);
      } else if (f == 5) {
        ok = c.Expect(wt, kLen, "XStat.str_value") && c.Bytes(&str);
      } else if (f == 7) {
        ok = c.Expect(wt, kVarint, "XStat.ref_value") && c.Varint(&v);
        ref = static_cast<int64_t>(v);
      } else {
        ok = c.Skip(wt);
      }
      if (!ok) return false;
    }
    std::string_view* out = nullptr;
    if (scope_stat_ && metadata_id == *scope_stat_) out = scope;
    if (module_stat_ && metadata_id == *module_stat_) out = module;
    if (out == nullptr) return true;
    if (!str.empty()) {
      *out = str;
    } else if (auto it = stat_names_.find(ref); it != stat_names_.end()) {
      *out = it->second;
    }
    return true;
  }

  Status DecodeMetadataEntry(std::string_view entry) {
    Cursor c(entry);
    int64_t key = 0;
    std::string_view value;
    while (!c.Done()) {
      uint32_t f = 0, wt = 0;
      if (!c.Tag(&f, &wt)) return Corrupt(c, "event metadata entry");
      if (f == 1) {
        uint64_t v;
        if (!c.Expect(wt, kVarint, "map key") || !c.Varint(&v))
          return Corrupt(c, "event metadata entry");
        key = static_cast<int64_t>(v);
      } else if (f == 2) {
        if (!c.Expect(wt, kLen, "map value") || !c.Bytes(&value)) {
          return Corrupt(c, "event metadata entry");
        }
      } else if (!c.Skip(wt)) {
        return Corrupt(c, "event metadata entry");
      }
    }
    EventMetadata md;
    Cursor v(value);
    while (!v.Done()) {
      uint32_t f = 0, wt = 0;
      if (!v.Tag(&f, &wt)) return Corrupt(v, "event metadata " + Num(static_cast<uint64_t>(key)));
      bool ok = true;
      switch (f) {
        case 1:
          ok = v.Expect(wt, kVarint, "XEventMetadata.id") && v.Skip(wt);
          break;
        case 2:
          ok = v.Expect(wt, kLen, "XEventMetadata.name") && v.Bytes(&md.name);
          break;
        case 4:
          ok = v.Expect(wt, kLen, "XEventMetadata.display_name") && v.Bytes(&md.display_name);
          break;
        default:  // metadata bytes, stats, child_id (packed or not)
          ok = v.Skip(wt);
      }
      if (!ok) return Corrupt(v, "event metadata " + Num(static_cast<uint64_t>(key)));
    }
    metadata_.Add(key, md);
    return {};
  }

  Status DecodeLine(std::string_view bytes, bool emit, int64_t pid, const char* skip_reason) {
    Cursor c(bytes);
    int64_t id = 0, display_id = 0, timestamp_ns = 0;
    std::string_view name, display_name;
    uint64_t events = 0;
    while (!c.Done()) {
      uint32_t f = 0, wt = 0;
      if (!c.Tag(&f, &wt)) return Corrupt(c, "line");
      bool ok = true;
      uint64_t v = 0;
      switch (f) {
        case 1:
          ok = c.Expect(wt, kVarint, "XLine.id") && c.Varint(&v);
          id = static_cast<int64_t>(v);
          break;
        case 10:
          ok = c.Expect(wt, kVarint, "XLine.display_id") && c.Varint(&v);
          display_id = static_cast<int64_t>(v);
          break;
        case 2:
          ok = c.Expect(wt, kLen, "XLine.name") && c.Bytes(&name);
          break;
        case 11:
          ok = c.Expect(wt, kLen, "XLine.display_name") && c.Bytes(&display_name);
          break;
        case 3:
          ok = c.Expect(wt, kVarint, "XLine.timestamp_ns") && c.Varint(&v);
          timestamp_ns = static_cast<int64_t>(v);
          break;
        case 4:
          ok = c.Expect(wt, kLen, "XLine.events") && c.Skip(wt);
          ++events;
          break;
        default:
          ok = c.Skip(wt);
      }
      if (!ok) return Corrupt(c, "line");
    }
    if (!emit) {
      if (events > 0) summary_->drops[skip_reason] += events;
      return {};
    }
    if (!base_set_) {
      base_us_ = FloorDiv(timestamp_ns, 1000);
      // Near INT64_MIN the floor times 1000 no longer fits: truncate instead.
      if (__builtin_mul_overflow(base_us_, int64_t{1000}, &base_ns_)) {
        base_us_ = timestamp_ns / 1000;
        base_ns_ = base_us_ * 1000;
      }
      base_set_ = true;
      summary_->time_base_us = base_us_;
    }
    // (timestamp_ns - base) * 1000 in int64; a line too far from the base
    // loses its events (counted) rather than wrapping around.
    int64_t line_ps = 0;
    const bool line_ok = !__builtin_sub_overflow(timestamp_ns, base_ns_, &line_ps) &&
                         !__builtin_mul_overflow(line_ps, int64_t{1000}, &line_ps);

    TraceEvent m;
    m.ph = 'M';
    m.has_name = true;
    m.name = "thread_name";
    m.pid = Id{IdKind::kInt, pid, {}};
    // XLA's trace_viewer resource id is a uint32.
    const uint32_t tid = static_cast<uint32_t>(display_id != 0 ? display_id : id);
    m.tid = Id{IdKind::kInt, static_cast<int64_t>(tid), {}};
    m.args_name = display_name.empty() ? name : display_name;
    Emit(m);

    TraceEvent x;
    x.ph = 'X';
    x.pid = m.pid;
    x.tid = m.tid;
    x.has_dur = true;
    x.dur_exact = true;
    Cursor lc(bytes);
    while (!lc.Done()) {
      uint32_t f = 0, wt = 0;
      if (!lc.Tag(&f, &wt)) return Corrupt(lc, "line");
      if (f != 4) {
        if (!lc.Skip(wt)) return Corrupt(lc, "line");
        continue;
      }
      std::string_view ev;
      if (!lc.Bytes(&ev)) return Corrupt(lc, "line");
      int64_t metadata_id = 0, offset_ps = 0, duration_ps = 0;
      bool aggregated = false;
      std::string_view scope, module;
      Cursor e(ev);
      while (!e.Done()) {
        uint32_t ef = 0, ewt = 0;
        if (!e.Tag(&ef, &ewt)) return Corrupt(e, "event");
        bool ok = true;
        uint64_t v = 0;
        switch (ef) {
          case 1:
            ok = e.Expect(ewt, kVarint, "XEvent.metadata_id") && e.Varint(&v);
            metadata_id = static_cast<int64_t>(v);
            break;
          case 2:
            ok = e.Expect(ewt, kVarint, "XEvent.offset_ps") && e.Varint(&v);
            offset_ps = static_cast<int64_t>(v);
            aggregated = false;  // oneof: the last member set wins
            break;
          case 3:
            ok = e.Expect(ewt, kVarint, "XEvent.duration_ps") && e.Varint(&v);
            duration_ps = static_cast<int64_t>(v);
            break;
          case 5:
            ok = e.Expect(ewt, kVarint, "XEvent.num_occurrences") && e.Varint(&v);
            aggregated = true;
            break;
          case 4:
            if (scope_stat_ || module_stat_) {
              std::string_view stat;
              ok = e.Expect(ewt, kLen, "XEvent.stats") && e.Bytes(&stat) &&
                   ScopeOfStat(stat, &scope, &module);
              break;
            }
            ok = e.Skip(ewt);
            break;
          default:  // unknown fields
            ok = e.Skip(ewt);
        }
        if (!ok) return Corrupt(e, "event");
      }
      if (aggregated) {
        ++summary_->drops["aggregated_event"];
        continue;
      }
      int64_t ts_ps = 0;
      if (!line_ok || __builtin_add_overflow(line_ps, offset_ps, &ts_ps)) {
        ++summary_->drops["time_overflow"];
        continue;
      }
      const EventMetadata* md = metadata_.Find(metadata_id);
      x.has_name = md != nullptr;
      x.name = md == nullptr ? std::string_view()
                             : (md->display_name.empty() ? md->name : md->display_name);
      x.args_name = scope;
      x.args_hlo_module = module;
      x.has_ts = true;
      x.ts_ps = ts_ps;
      x.dur_ps = duration_ps;
      x.dur_us = static_cast<double>(duration_ps) / 1e6;
      Emit(x);
    }
    return {};
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
  std::vector<std::string_view> plane_stats_;                 // this plane's XPlane.stats
  // Per parse.
  ParseSummary* summary_ = nullptr;
  EventSink* sink_ = nullptr;
  bool base_set_ = false;
  int64_t base_us_ = 0;
  int64_t base_ns_ = 0;
};

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

// Decodes the "/host:metadata" plane's modules into `index`.
Status DecodeMetadataPlane(std::string_view plane, HloIndex& index) {
  Cursor c(plane);
  std::vector<std::string_view> events;  // XEventMetadata messages
  std::optional<int64_t> hlo_stat;
  while (!c.Done()) {
    uint32_t f = 0, wt = 0;
    std::string_view entry;
    if (!c.Tag(&f, &wt)) return MakeError(ErrorCode::kCorrupt, "metadata plane: " + c.error());
    if (f != 4 && f != 5) {
      if (!c.Skip(wt)) return MakeError(ErrorCode::kCorrupt, "metadata plane: " + c.error());
      continue;
    }
    if (!c.Expect(wt, kLen, "map entry") || !c.Bytes(&entry)) {
      return MakeError(ErrorCode::kCorrupt, "metadata plane: " + c.error());
    }
    Cursor e(entry);
    std::string_view value;
    while (!e.Done()) {
      uint32_t ef = 0, ewt = 0;
      bool ok = e.Tag(&ef, &ewt) &&
                (ef == 2 ? e.Expect(ewt, kLen, "map value") && e.Bytes(&value) : e.Skip(ewt));
      if (!ok) return MakeError(ErrorCode::kCorrupt, "metadata plane entry: " + e.error());
    }
    if (f == 4) {
      events.push_back(value);
      continue;
    }
    // XStatMetadata: id = 1, name = 2.
    Cursor m(value);
    uint64_t id = 0;
    std::string_view name;
    while (!m.Done()) {
      uint32_t mf = 0, mwt = 0;
      bool ok = m.Tag(&mf, &mwt);
      if (ok && mf == 1) {
        ok = m.Expect(mwt, kVarint, "XStatMetadata.id") && m.Varint(&id);
      } else if (ok && mf == 2) {
        ok = m.Expect(mwt, kLen, "XStatMetadata.name") && m.Bytes(&name);
      } else if (ok) {
        ok = m.Skip(mwt);
      }
      if (!ok) return MakeError(ErrorCode::kCorrupt, "stat metadata: " + m.error());
    }
    if (name == "Hlo Proto") hlo_stat = static_cast<int64_t>(id);
  }
  if (!hlo_stat) return {};
  std::map<std::string, int> seen;  // module name -> count
  // Each module within HloLimits, and all of them together within the
  // per-file share of inlined schedule entries (what their kept launches and
  // the expansion work add up to, however many modules the plane holds).
  const HloLimits per_module;
  size_t expanded_left = kMaxHloExpandedPerFile;
  for (std::string_view event : events) {
    Cursor m(event);
    while (!m.Done()) {
      uint32_t f = 0, wt = 0;
      std::string_view stat;
      bool ok =
          m.Tag(&f, &wt) &&
          (f == 5 ? m.Expect(wt, kLen, "XEventMetadata.stats") && m.Bytes(&stat) : m.Skip(wt));
      if (!ok) return MakeError(ErrorCode::kCorrupt, "event metadata: " + m.error());
      if (f != 5) continue;
      // XStat: metadata_id = 1, bytes_value = 6.
      Cursor st(stat);
      uint64_t stat_id = 0;
      std::string_view bytes;
      bool has_bytes = false;
      while (!st.Done()) {
        uint32_t sf = 0, swt = 0;
        ok = st.Tag(&sf, &swt);
        if (ok && sf == 1) {
          ok = st.Expect(swt, kVarint, "XStat.metadata_id") && st.Varint(&stat_id);
        } else if (ok && sf == 6) {
          ok = st.Expect(swt, kLen, "XStat.bytes_value") && st.Bytes(&bytes);
          has_bytes = ok;
        } else if (ok) {
          ok = st.Skip(swt);
        }
        if (!ok) return MakeError(ErrorCode::kCorrupt, "event metadata stat: " + st.error());
      }
      if (!has_bytes || static_cast<int64_t>(stat_id) != *hlo_stat) continue;
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
  }
  for (const auto& [name, count] : seen) {
    if (count > 1) {
      index.modules.erase(name);
      index.too_complex.erase(name);
      index.ambiguous.push_back(name);
    }
  }
  return {};
}

}  // namespace

Result<HloIndex> ReadXPlaneHloModules(read::ByteSource& source, size_t chunk_bytes,
                                      size_t max_plane_bytes) {
  std::vector<char> chunk;
  std::string scratch;
  StreamReader in(source, chunk_bytes, chunk);
  HloIndex index;
  while (true) {
    const uint64_t tag_at = in.Offset();
    auto tag = in.Varint(/*at_eof_ok=*/true, "a field tag");
    if (!tag) return tl::unexpected(tag.error());
    if (!tag->has_value()) break;
    const uint64_t field = **tag >> 3;
    const uint32_t wire_type = static_cast<uint32_t>(**tag & 7);
    if (field == 0 || field > kMaxFieldNumber || wire_type != kLen) {
      if (wire_type == kVarint) {
        auto v = in.Varint(false, "a varint field");
        if (!v) return tl::unexpected(v.error());
        continue;
      }
      return MakeError(ErrorCode::kCorrupt,
                       "not an XSpace protobuf: byte " + Num(tag_at) + ": field " + Num(field));
    }
    auto len = in.Varint(false, "a length prefix");
    if (!len) return tl::unexpected(len.error());
    const uint64_t n = **len;
    if (field != 1) {
      if (auto s = in.Skip(n, "field " + Num(field)); !s) return tl::unexpected(s.error());
      continue;
    }
    if (auto fill = in.Fill(); !fill) return tl::unexpected(fill.error());
    std::string_view head = in.Peek();
    if (head.size() > n) head = head.substr(0, static_cast<size_t>(n));
    // A copy: reading the plane refills the buffer the view points into.
    std::optional<std::string> name;
    if (auto head_name = PlaneNameFromHead(head)) name = std::string(*head_name);
    if (name && *name != "/host:metadata") {
      if (auto s = in.Skip(n, "plane"); !s) return tl::unexpected(s.error());
      continue;
    }
    if (n > max_plane_bytes) {
      return MakeError(ErrorCode::kTooLarge, "plane at byte " + Num(tag_at) + " claims " + Num(n) +
                                                 " bytes, above the " + Num(max_plane_bytes) +
                                                 "-byte plane limit");
    }
    auto bytes = in.Bytes(n, scratch, "plane at byte " + Num(tag_at));
    if (!bytes) return tl::unexpected(bytes.error());
    if (!name) {
      if (auto full_name = PlaneNameFromHead(*bytes)) name = std::string(*full_name);
    }
    if (!name || *name != "/host:metadata") continue;
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

namespace {

// One XStat's metadata id and string value (fields 1 and 5).
bool DecodeStringStat(std::string_view stat, uint64_t* id, std::string_view* value) {
  Cursor c(stat);
  while (!c.Done()) {
    uint32_t f = 0, wt = 0;
    if (!c.Tag(&f, &wt)) return false;
    const bool ok = f == 1   ? c.Expect(wt, kVarint, "XStat.metadata_id") && c.Varint(id)
                    : f == 5 ? c.Expect(wt, kLen, "XStat.str_value") && c.Bytes(value)
                             : c.Skip(wt);
    if (!ok) return false;
  }
  return true;
}

// A stat metadata map entry (key 1, value 2 = XStatMetadata{name = 2}).
bool DecodeStatName(std::string_view entry, int64_t* key, std::string_view* name) {
  Cursor c(entry);
  while (!c.Done()) {
    uint32_t f = 0, wt = 0;
    if (!c.Tag(&f, &wt)) return false;
    if (f == 1) {
      uint64_t v = 0;
      if (!(c.Expect(wt, kVarint, "stat metadata key") && c.Varint(&v))) return false;
      *key = static_cast<int64_t>(v);
    } else if (f == 2) {
      std::string_view value;
      if (!(c.Expect(wt, kLen, "XStatMetadata") && c.Bytes(&value))) return false;
      Cursor m(value);
      while (!m.Done()) {
        uint32_t mf = 0, mwt = 0;
        if (!m.Tag(&mf, &mwt)) return false;
        if (!(mf == 2 ? m.Expect(mwt, kLen, "XStatMetadata.name") && m.Bytes(name) : m.Skip(mwt))) {
          return false;
        }
      }
    } else if (!c.Skip(wt)) {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<std::vector<std::string>> ReadXPlaneDeviceNames(read::ByteSource& source,
                                                       size_t chunk_bytes) {
  // A plane's name, stat metadata and stats are small; a larger field is
  // skipped unread, like the lines and event metadata.
  constexpr uint64_t kMaxFieldBytes = 1 << 20;
  std::vector<char> chunk;
  std::string scratch;
  StreamReader in(source, chunk_bytes, chunk);
  auto corrupt = [&](const std::string& what) {
    return MakeError(ErrorCode::kCorrupt,
                     "not an XSpace protobuf: byte " + Num(in.Offset()) + ": " + what);
  };
  while (true) {
    auto tag = in.Varint(/*at_eof_ok=*/true, "a field tag");
    if (!tag) return tl::unexpected(tag.error());
    if (!tag->has_value()) break;
    const uint32_t wire_type = static_cast<uint32_t>(**tag & 7);
    if (wire_type == kVarint) {
      if (auto v = in.Varint(false, "a varint field"); !v) return tl::unexpected(v.error());
      continue;
    }
    if (wire_type != kLen) return corrupt("field " + Num(**tag >> 3));
    auto len = in.Varint(false, "a length prefix");
    if (!len) return tl::unexpected(len.error());
    if ((**tag >> 3) != 1) {
      if (auto st = in.Skip(**len, "field"); !st) return tl::unexpected(st.error());
      continue;
    }
    // A plane, field by field: only a device plane's name, stat metadata
    // and stats are read.
    const uint64_t end = in.Offset() + **len;
    bool device = false;
    std::map<int64_t, std::string> stat_names;
    std::vector<std::pair<uint64_t, std::string>> stats;  // metadata id, string value
    while (in.Offset() < end) {
      auto ptag = in.Varint(false, "a plane field tag");
      if (!ptag) return tl::unexpected(ptag.error());
      const uint64_t field = **ptag >> 3;
      const uint32_t pwt = static_cast<uint32_t>(**ptag & 7);
      if (pwt == kVarint) {
        if (auto v = in.Varint(false, "a plane varint"); !v) return tl::unexpected(v.error());
        continue;
      }
      if (pwt != kLen) return corrupt("plane field " + Num(field));
      auto n = in.Varint(false, "a plane field length");
      if (!n) return tl::unexpected(n.error());
      if (in.Offset() + **n > end) return corrupt("a plane field runs past its plane");
      const bool wanted = field == 2 || (device && (field == 5 || field == 6));
      if (!wanted || **n > kMaxFieldBytes) {
        if (auto st = in.Skip(**n, "plane field"); !st) return tl::unexpected(st.error());
        continue;
      }
      auto bytes = in.Bytes(**n, scratch, "plane field");
      if (!bytes) return tl::unexpected(bytes.error());
      if (field == 2) {
        device = KindOf(*bytes) == PlaneKind::kDevice;
        if (!device) break;  // the rest of the plane is skipped below
      } else if (field == 5) {
        int64_t key = 0;
        std::string_view name;
        if (DecodeStatName(*bytes, &key, &name)) stat_names[key] = std::string(name);
      } else {
        uint64_t id = 0;
        std::string_view value;
        if (DecodeStringStat(*bytes, &id, &value) && !value.empty()) {
          stats.emplace_back(id, std::string(value));
        }
      }
    }
    if (in.Offset() < end) {
      if (auto st = in.Skip(end - in.Offset(), "plane"); !st) return tl::unexpected(st.error());
    }
    std::vector<std::string> names;
    for (const auto& [id, value] : stats) {
      auto it = stat_names.find(static_cast<int64_t>(id));
      if (it != stat_names.end() && it->second == "gpu_device_name") names.push_back(value);
    }
    if (!names.empty()) return names;  // the process's GPUs are one kind
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
