// EventDecoder (see event_decoder.h). Choices for cases the format leaves
// open are listed in json_trace_parser.cc, which is where entries are cut.
#include "parse/event_decoder.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>

#include "parse/trace_parser.h"

namespace profwatch::parse {
namespace {

namespace od = simdjson::ondemand;

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && IsJsonSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Strict JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool IsJsonNumber(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    const size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i > start;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (i < s.size() && s[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == s.size();
}

std::string_view DropReason(simdjson::error_code err) {
  return err == simdjson::UTF8_ERROR ? "bad_utf8" : "bad_json";
}

void DropError(DecodeCounts& counts, simdjson::error_code err) { counts.Drop(DropReason(err)); }

// A key as one 8-byte word: its bytes, then the closing quote, and a mask over
// them, so that each of an event's key compares is one word compare
// (simdjson's unsafe_is_equal compares a byte at a time).
struct KeyWord {
  uint64_t word = 0;
  uint64_t mask = 0;
};
constexpr KeyWord MakeKey(std::string_view s) {
  if (s.size() > 7) throw "a key word holds at most 7 bytes and the quote";
  std::array<char, 8> w{}, m{};
  for (size_t i = 0; i < s.size(); ++i) {
    w[i] = s[i];
    m[i] = '\xff';
  }
  w[s.size()] = '"';
  m[s.size()] = '\xff';
  return {std::bit_cast<uint64_t>(w), std::bit_cast<uint64_t>(m)};
}
constexpr KeyWord kPh = MakeKey("ph"), kPid = MakeKey("pid"), kTid = MakeKey("tid"),
                  kTs = MakeKey("ts"), kName = MakeKey("name"), kCat = MakeKey("cat"),
                  kDur = MakeKey("dur"), kArgs = MakeKey("args"), kDevice = MakeKey("device"),
                  kStream = MakeKey("stream"), kDtype = MakeKey("dtype"),
                  kHloOp = MakeKey("hlo_op"), kBytes = MakeKey("bytes");

// What unsafe_is_equal answers (the raw key's bytes, escapes unresolved,
// equal the name and a quote follows). Reads 8 bytes: the key lies in
// simdjson-padded input.
inline bool KeyIs(const od::raw_json_string& key, KeyWord k) {
  uint64_t w;
  std::memcpy(&w, key.raw(), sizeof w);
  return (w & k.mask) == k.word;
}
// "hlo_module" is longer than a key word: the raw bytes and the quote (the
// input is padded, so reading 11 bytes stays inside it).
inline bool KeyIsHloModule(const od::raw_json_string& key) {
  return key.raw()[0] == 'h' && std::memcmp(key.raw(), "hlo_module\"", 11) == 0;
}
// Kineto's operator keys, likewise (FLOP counting).
inline bool KeyIsInputDims(const od::raw_json_string& key) {
  return key.raw()[0] == 'I' && std::memcmp(key.raw(), "Input Dims\"", 11) == 0;
}
inline bool KeyIsConcreteInputs(const od::raw_json_string& key) {
  return key.raw()[0] == 'C' && std::memcmp(key.raw(), "Concrete Inputs\"", 16) == 0;
}
inline bool KeyIsInputType(const od::raw_json_string& key) {
  return key.raw()[0] == 'I' && std::memcmp(key.raw(), "Input type\"", 11) == 0;
}
// JAX's memory operation details (trace_event.h args_memop_details).
inline bool KeyIsMemcpyDetails(const od::raw_json_string& key) {
  return key.raw()[0] == 'm' && std::memcmp(key.raw(), "memcpy_details\"", 15) == 0;
}
inline bool KeyIsMemsetDetails(const od::raw_json_string& key) {
  return key.raw()[0] == 'M' && std::memcmp(key.raw(), "Memset_details\"", 15) == 0;
}
// Kineto's kernel-to-launch link ("correlation"; JAX's "correlation_id" is another key).
inline bool KeyIsCorrelation(const od::raw_json_string& key) {
  return key.raw()[0] == 'c' && std::memcmp(key.raw(), "correlation\"", 12) == 0;
}
inline bool KeyIsExternalId(const od::raw_json_string& key) {
  return key.raw()[0] == 'E' && std::memcmp(key.raw(), "External id\"", 12) == 0;
}
// Kineto's communication kernel keys (collectives.h in aggregate/).
inline bool KeyIsCollectiveName(const od::raw_json_string& key) {
  return key.raw()[0] == 'C' && std::memcmp(key.raw(), "Collective name\"", 16) == 0;
}
inline bool KeyIsInMsgNelems(const od::raw_json_string& key) {
  return key.raw()[0] == 'I' && std::memcmp(key.raw(), "In msg nelems\"", 14) == 0;
}
inline bool KeyIsOutMsgNelems(const od::raw_json_string& key) {
  return key.raw()[0] == 'O' && std::memcmp(key.raw(), "Out msg nelems\"", 15) == 0;
}
inline bool KeyIsGroupSize(const od::raw_json_string& key) {
  return key.raw()[0] == 'G' && std::memcmp(key.raw(), "Group size\"", 11) == 0;
}
inline bool KeyIsPgDesc(const od::raw_json_string& key) {
  return key.raw()[0] == 'P' && std::memcmp(key.raw(), "Process Group Description\"", 26) == 0;
}
inline bool KeyIsPgRanks(const od::raw_json_string& key) {
  return key.raw()[0] == 'P' && std::memcmp(key.raw(), "Process Group Ranks\"", 20) == 0;
}
// A count: a non-negative integer number token, else -1 (never an error:
// a count is optional metadata).
int64_t CountOf(od::value& v) {
  const std::string_view tok = TrimRight(v.raw_json_token());
  int64_t n = -1;
  auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), n);
  if (ec != std::errc() || p != tok.data() + tok.size() || n < 0) return -1;
  return n;
}

// The raw text of an array value (a view of the input, from its '[' to its
// ']'); empty otherwise.
simdjson::error_code RawArray(od::value& v, std::string_view& out) {
  out = {};
  od::json_type t;
  if (auto err = v.type().get(t)) return err;
  if (t != od::json_type::array) return simdjson::SUCCESS;
  od::array a;
  if (auto err = v.get_array().get(a)) return err;
  // The raw text runs to the next token: whitespace after the array is cut.
  if (auto err = a.raw_json().get(out)) return err;
  out = TrimRight(out);
  return simdjson::SUCCESS;
}

// Whether s[0, n) holds a backslash.
inline bool HasBackslash(const char* s, size_t n) { return std::memchr(s, '\\', n) != nullptr; }

// A string value. Without escapes it is a view of the input itself (stage 1
// already validated its UTF-8), which saves simdjson's unescaping copy;
// with escapes simdjson unescapes it into its string buffer. Both views live
// until the next event. Sets is_string=false (and leaves `out`) otherwise.
simdjson::error_code GetString(od::value& v, std::string_view& out, bool& is_string) {
  const std::string_view tok = TrimRight(v.raw_json_token());
  if (tok.empty() || tok[0] != '"') {
    is_string = false;
    return simdjson::SUCCESS;
  }
  is_string = true;
  if (tok.size() >= 2 && tok.back() == '"' && !HasBackslash(tok.data() + 1, tok.size() - 2)) {
    out = tok.substr(1, tok.size() - 2);
    return simdjson::SUCCESS;
  }
  return v.get_string().get(out);
}

// The text of a number value, or empty when the value is not a number.
std::string_view NumberToken(od::value& v) {
  const std::string_view tok = TrimRight(v.raw_json_token());
  if (tok.empty() || (tok[0] != '-' && (tok[0] < '0' || tok[0] > '9'))) return {};
  return tok;
}

bool ParseInt(od::value& v, bool& has, int64_t& out);

// A double with an integral value inside int64 (Python's 1.0 == 1), as int64.
// The range comes first: casting a double outside int64 is undefined behaviour.
bool IntegralDouble(double d, int64_t& out) {
  if (!(d >= -9.2e18 && d <= 9.2e18) || d != static_cast<double>(static_cast<int64_t>(d))) {
    return false;
  }
  out = static_cast<int64_t>(d);
  return true;
}

// Reads a "dur" value into `ev`: has_dur, dur_exact and dur_ps, and dur_us
// when `as_double`. A value that is not a number leaves has_dur false;
// returns false on a number token that is not JSON (bad JSON).
[[gnu::always_inline]] inline bool ParseDur(od::value& v, bool as_double, TraceEvent& ev) {
  ev.has_dur = ev.dur_exact = false;
  ev.dur_ps = 0;
  ev.dur_us = 0.0;
  const std::string_view text = NumberToken(v);
  if (text.empty()) return true;
  if (!as_double) {
    // Same outcomes as below without the double: a number that does not fit
    // int64 picoseconds is a dur, just not an exact one.
    int64_t ps = 0;
    const bool exact = MicrosTextToPicos(text, 0, ps);
    if (!exact && !IsJsonNumber(text)) return false;
    ev.has_dur = true;
    ev.dur_exact = exact;
    ev.dur_ps = exact ? ps : 0;
    return true;
  }
  double d;
  if (v.get_double().get(d)) {
    // simdjson refuses out-of-range numbers ("1e400"); Python's json gives
    // +-inf for them.
    if (!IsJsonNumber(text)) return false;
    d = text[0] == '-' ? -HUGE_VAL : HUGE_VAL;
  }
  ev.has_dur = true;
  ev.dur_us = d;
  int64_t ps = 0;
  ev.dur_exact = MicrosTextToPicos(text, 0, ps);
  ev.dur_ps = ev.dur_exact ? ps : 0;
  return true;
}

// Sets ev.ts_ps from the text of "ts", relative to the time base; the first
// ts that has a floor sets the base. A ts that does not fit leaves has_ts
// false.
[[gnu::always_inline]] inline void SetTs(std::string_view ts_text, TimeBase& base, TraceEvent& ev) {
  if (!base.known) {
    if (const std::optional<int64_t> floor = MicrosTextFloor(ts_text)) {
      base.us = *floor;
      base.known = true;
    }
  }
  if (base.known) {
    if (int64_t ps; MicrosTextToPicos(ts_text, base.us, ps)) {
      ev.has_ts = true;
      ev.ts_ps = ps;
    }
  }
}

// Counts a decoded event and what it shows of the trace's schema: a "cat"
// key (Kineto), a JAX device or host process name.
[[gnu::always_inline]] inline void CountEvent(const TraceEvent& ev, bool has_cat_key,
                                              DecodeCounts& counts) {
  if (has_cat_key) counts.saw_cat = true;
  if (ev.ph == 'M' && ev.has_name && ev.name == "process_name" &&
      (ev.args_name.starts_with("/device:") || ev.args_name.starts_with("/host:"))) {
    counts.saw_jax_process = true;
  }
  if (ev.ph == 'M') ++counts.metadata_events;
  ++counts.events;
}

// A string arg: `out` cleared, then the value when it is a string.
[[gnu::always_inline]] inline simdjson::error_code StringArg(od::value& v, std::string_view& out) {
  out = {};
  bool is_string;
  return GetString(v, out, is_string);
}

// The raw text between a string value's quotes, no unescaping (an escape
// stays escaped); empty when the value is not a string.
[[gnu::always_inline]] inline std::string_view RawQuoted(od::value& v) {
  const std::string_view tok = TrimRight(v.raw_json_token());
  if (tok.size() >= 2 && tok.front() == '"' && tok.back() == '"') {
    return tok.substr(1, tok.size() - 2);
  }
  return {};
}

// Clears every args field of `ev` (an event without args has none).
[[gnu::always_inline]] inline void ResetArgs(TraceEvent& ev) {
  ev.args_name = {};
  ev.args_hlo_module = {};
  ev.args_input_dims = {};
  ev.args_concrete_inputs = {};
  ev.args_input_type = {};
  // One assignment each, not chained: a chain reads back each view just
  // stored in two parts as one 16-byte word (a store-forwarding stall).
  ev.args_collective = {};
  ev.args_dtype = {};
  ev.args_hlo_op = {};
  ev.args_pg_desc = {};
  ev.args_pg_ranks = {};
  ev.args_in_nelems = -1;
  ev.args_out_nelems = -1;
  ev.args_group_size = -1;
  ev.args_bytes = -1;
  ev.args_memop_details = {};
  ev.has_args_device = ev.has_args_stream = ev.has_args_external_id = false;
  ev.args_correlation = -1;
}

// Reads one arg (key `ak`, value `av`) into `ev` when it is one ParseArgs
// reads. Returns false on a bad value; a simdjson error goes to `err`.
[[gnu::always_inline]] inline bool ParseArg(const od::raw_json_string ak, od::value& av,
                                            TraceEvent& ev, simdjson::error_code& err) {
  // One switch on the key's first byte, then the exact compare: most keys
  // (correlation_id, tf_op, grid, ...) are skipped after one branch.
  switch (ak.raw()[0]) {
    case 'n':
      if (KeyIs(ak, kName)) {
        if ((err = StringArg(av, ev.args_name))) return true;
      }
      break;
    case 'd':
      if (KeyIs(ak, kDevice)) {
        if (!ParseInt(av, ev.has_args_device, ev.args_device)) return false;
      } else if (KeyIs(ak, kDtype)) {
        if ((err = StringArg(av, ev.args_dtype))) return true;
      }
      break;
    case 's':
      if (KeyIs(ak, kStream)) {
        if (!ParseInt(av, ev.has_args_stream, ev.args_stream)) return false;
      }
      break;
    case 'h':
      if (KeyIsHloModule(ak)) {
        // Matched against module names only: the raw text between the quotes
        // (an escape stays escaped and matches no module), no unescaping.
        ev.args_hlo_module = RawQuoted(av);
      } else if (KeyIs(ak, kHloOp)) {
        // Like hlo_module: the raw text between the quotes (collective
        // instruction names have no escapes), no unescaping.
        ev.args_hlo_op = RawQuoted(av);
      }
      break;
    case 'E':
      if (KeyIsExternalId(ak)) {
        if (!ParseInt(av, ev.has_args_external_id, ev.args_external_id)) return false;
      }
      break;
    case 'I':
      if (KeyIsInputDims(ak)) {
        if ((err = RawArray(av, ev.args_input_dims))) return true;
      } else if (KeyIsInMsgNelems(ak)) {
        ev.args_in_nelems = CountOf(av);
      } else if (KeyIsInputType(ak)) {
        if ((err = RawArray(av, ev.args_input_type))) return true;
      }
      break;
    case 'c':
      if (KeyIsCorrelation(ak)) {
        bool has = false;
        int64_t c = -1;
        if (!ParseInt(av, has, c)) return false;
        ev.args_correlation = has && c >= 0 ? c : -1;
      }
      break;
    case 'C':
      if (KeyIsConcreteInputs(ak)) {
        if ((err = RawArray(av, ev.args_concrete_inputs))) return true;
      } else if (KeyIsCollectiveName(ak)) {
        if ((err = StringArg(av, ev.args_collective))) return true;
      }
      break;
    case 'b':
      if (KeyIs(ak, kBytes)) ev.args_bytes = CountOf(av);
      break;
    case 'm':
    case 'M':
      if (KeyIsMemcpyDetails(ak) || KeyIsMemsetDetails(ak)) {
        if ((err = StringArg(av, ev.args_memop_details))) return true;
      }
      break;
    case 'O':
      if (KeyIsOutMsgNelems(ak)) ev.args_out_nelems = CountOf(av);
      break;
    case 'G':
      if (KeyIsGroupSize(ak)) ev.args_group_size = CountOf(av);
      break;
    case 'P':
      if (KeyIsPgDesc(ak)) {
        if ((err = StringArg(av, ev.args_pg_desc))) return true;
      } else if (KeyIsPgRanks(ak)) {
        if ((err = StringArg(av, ev.args_pg_ranks))) return true;
      }
      break;
    default:
      break;
  }
  return true;
}

// Reads args.name/device/stream/hlo_module and the Kineto operator args
// (Input Dims, Input type, Concrete Inputs, External id, correlation) into `ev`. Returns false on a
// bad value; a simdjson error goes to `err`.
bool ParseArgs(od::value& v, TraceEvent& ev, simdjson::error_code& err) {
  ResetArgs(ev);
  od::json_type t;
  if ((err = v.type().get(t))) return true;
  if (t != od::json_type::object) return true;  // null args (Kineto) and the like
  od::object args;
  if ((err = v.get_object().get(args))) return true;
  for (auto arg_res : args) {
    // A reference, not a copy (as for the event's own fields): a copy makes
    // GCC read back as one 16-byte word what it stored in two parts, a
    // store-to-load forwarding stall on every argument.
    if ((err = arg_res.error())) return true;
    od::field& arg = arg_res.value_unsafe();
    if (!ParseArg(arg.key(), arg.value(), ev, err)) return false;
    if (err) return true;
  }
  return true;
}

bool ParseInt(od::value& v, bool& has, int64_t& out) {
  od::json_type t;
  if (v.type().get(t)) return false;
  has = false;
  if (t != od::json_type::number) return true;
  int64_t i;
  if (!v.get_int64().get(i)) {
    has = true;
    out = i;
    return true;
  }
  double d;
  if (!v.get_double().get(d) && IntegralDouble(d, out)) has = true;
  return true;
}

// A plain JSON integer token (no fraction, exponent or leading zero) that
// fits int64: the shape of nearly every pid and tid.
bool PlainInt(std::string_view tok, int64_t& out) {
  const char* b = tok.data();
  const char* e = b + tok.size();
  const char* digits = b < e && *b == '-' ? b + 1 : b;
  // Up to 18 digits cannot overflow: read them here (ids are 1-3 digits, for
  // which from_chars's generality is wasted). Longer ones go to from_chars
  // for its range check.
  const char* p = digits;
  uint64_t value = 0;
  while (p < e && p - digits < 18 && static_cast<unsigned>(*p - '0') < 10) {
    value = value * 10 + static_cast<unsigned>(*p++ - '0');
  }
  if (p == digits) return false;
  if (*digits == '0' && p - digits > 1) return false;  // leading zero: not JSON
  if (p == e || static_cast<unsigned>(*p - '0') >= 10) {
    if (p != e && !IsJsonSpace(*p)) return false;  // a fraction, exponent or junk
    out = digits == b ? static_cast<int64_t>(value) : -static_cast<int64_t>(value);
    return true;
  }
  const auto [end, ec] = std::from_chars(b, e, out);
  if (ec != std::errc()) return false;
  return end == e || IsJsonSpace(*end);
}

bool ParseId(od::value& v, Id& out) {
  out = Id{};
  if (int64_t n; PlainInt(v.raw_json_token(), n)) {
    out.kind = IdKind::kInt;
    out.num = n;
    return true;
  }
  od::json_type t;
  if (v.type().get(t)) return false;
  switch (t) {
    case od::json_type::null:
      return true;  // kMissing, like Python's None
    case od::json_type::string: {
      std::string_view s;
      bool is_string;
      if (GetString(v, s, is_string) || !is_string) return false;
      out.kind = IdKind::kString;
      out.str = s;
      return true;
    }
    case od::json_type::number: {
      int64_t i;
      if (!v.get_int64().get(i)) {
        out.kind = IdKind::kInt;
        out.num = i;
        return true;
      }
      double d;
      if (!v.get_double().get(d) && IntegralDouble(d, out.num)) {
        out.kind = IdKind::kInt;
        return true;
      }
      out.kind = IdKind::kOther;
      out.str = TrimRight(v.raw_json_token());
      return true;
    }
    case od::json_type::boolean:
      out.kind = IdKind::kOther;
      out.str = TrimRight(v.raw_json_token());
      return true;
    case od::json_type::array: {
      od::array a;
      std::string_view raw;
      if (v.get_array().get(a) || a.raw_json().get(raw)) return false;
      out.kind = IdKind::kOther;
      out.str = TrimRight(raw);
      return true;
    }
    case od::json_type::object: {
      od::object o;
      std::string_view raw;
      if (v.get_object().get(o) || o.raw_json().get(raw)) return false;
      out.kind = IdKind::kOther;
      out.str = TrimRight(raw);
      return true;
    }
  }
  return false;
}

}  // namespace

EventDecoder::Fields EventDecoder::Fields::Drop(simdjson::error_code err) {
  return Fields{kDrop, DropReason(err)};
}

void DecodeCounts::Add(const DecodeCounts& other) {
  events += other.events;
  empty_events += other.empty_events;
  metadata_events += other.metadata_events;
  for (const auto& [reason, n] : other.drops) drops[reason] += n;
  saw_cat = saw_cat || other.saw_cat;
  saw_jax_process = saw_jax_process || other.saw_jax_process;
}

DecodeOutcome EventDecoder::Decode(const char* p, size_t len, size_t capacity, TimeBase& base,
                                   DecodeCounts& counts, TraceEvent& ev) {
  od::document doc;
  simdjson::error_code err = parser_.iterate(p, len, capacity).get(doc);
  if (err) {
    DropError(counts, err);
    return DecodeOutcome::kDrop;
  }
  od::object obj;
  if ((err = doc.get_object().get(obj))) {
    DropError(counts, err);
    return DecodeOutcome::kDrop;
  }
  const Fields f = DecodeFields(obj, base, counts, ev);
  switch (f.outcome) {
    case Fields::kEvent:
      return DecodeOutcome::kEvent;
    case Fields::kEmpty:
      ++counts.empty_events;
      return DecodeOutcome::kEmpty;
    case Fields::kDrop:
      counts.Drop(f.drop);
      return DecodeOutcome::kDrop;
  }
  return DecodeOutcome::kDrop;
}

size_t EventDecoder::DecodeRun(char* buf, size_t capacity, const EntrySpan* entries, size_t count,
                               TimeBase& base, DecodeCounts& counts, TraceEvent* events,
                               size_t& kept) {
  if (count == 0) return 0;
  // The bytes around the run become the array's brackets for the parse (the
  // caller checked they are a separator or the traceEvents '['), then get
  // their old values back.
  const size_t open = entries[0].first - 1;
  const size_t close = entries[count - 1].first + entries[count - 1].second;
  const char saved_open = buf[open];
  const char saved_close = buf[close];
  buf[open] = '[';
  buf[close] = ']';
  size_t done = 0;
  od::document doc;
  od::array array;
  if (!parser_.iterate(buf + open, close + 1 - open, capacity - open).get(doc) &&
      !doc.get_array().get(array)) {
    for (auto element : array) {
      od::object obj;
      if (element.error() || element.value_unsafe().get_object().get(obj)) break;
      const Fields f = DecodeFields(obj, base, counts, events[kept]);
      if (f.outcome == Fields::kEvent) {
        ++kept;
      } else if (f.outcome == Fields::kEmpty) {
        ++counts.empty_events;
      } else {
        break;  // counted by the caller's Decode of this entry on its own
      }
      if (++done == count) break;
    }
  }
  buf[open] = saved_open;
  buf[close] = saved_close;
  return done;
}

bool EventDecoder::DecodeRegion(char* buf, size_t capacity, size_t first, size_t end,
                                TimeBase& base, DecodeCounts& counts,
                                std::vector<TraceEvent>& events, size_t& n) {
  n = 0;
  if (first == 0 || end <= first) return false;
  const size_t open = first - 1;
  const char saved_open = buf[open];
  const char saved_close = buf[end];
  buf[open] = '[';
  buf[end] = ']';
  DecodeCounts region;  // added to `counts` only when the whole region decodes
  bool ok = false;
  od::document doc;
  od::array array;
  if (!parser_.iterate(buf + open, end + 1 - open, capacity - open).get(doc) &&
      !doc.get_array().get(array)) {
    ok = true;
    for (auto element : array) {
      od::object obj;
      if (element.error() || element.value_unsafe().get_object().get(obj)) {
        ok = false;
        break;
      }
      if (n == events.size()) events.resize(std::max<size_t>(256, 2 * n));
      const Fields f = DecodeFields(obj, base, region, events[n]);
      if (f.outcome == Fields::kEvent) {
        ++n;
      } else if (f.outcome == Fields::kEmpty) {
        ++region.empty_events;
      } else {
        ok = false;
        break;
      }
    }
    // The array must close at the end: a cut inside a nested value leaves
    // brackets open, which On-Demand's skipping does not always report.
    ok = ok && doc.current_location().error() == simdjson::OUT_OF_BOUNDS;
  }
  buf[open] = saved_open;
  buf[end] = saved_close;
  if (!ok) {
    n = 0;
    return false;
  }
  counts.Add(region);
  return true;
}

size_t EventDecoder::RunLength(const char* buf, const EntrySpan* entries, size_t count) {
  const size_t start = entries[0].first;
  size_t n = 1;
  for (; n < count; ++n) {
    if (entries[n].first + entries[n].second - start > kMaxRunBytes) break;
    size_t commas = 0;
    for (size_t k = entries[n - 1].first + entries[n - 1].second; k < entries[n].first; ++k) {
      const char c = buf[k];
      if (c == ',') {
        ++commas;
      } else if (!IsJsonSpace(c)) {
        return n;
      }
    }
    if (commas != 1) break;
  }
  return n;
}

EventDecoder::Fields EventDecoder::DecodeFields(od::object& obj, TimeBase& base,
                                                DecodeCounts& counts, TraceEvent& ev) {
  simdjson::error_code err = simdjson::SUCCESS;
  ev.Reset();
  bool any = false;
  bool has_cat_key = false;
  std::string_view ts_text;
  for (auto field_res : obj) {
    // A reference, not a copy: a copy of the field makes GCC stall on a
    // store-to-load forward for every field.
    if ((err = field_res.error())) {
      return Fields::Drop(err);
    }
    od::field& field = field_res.value_unsafe();
    any = true;
    const od::raw_json_string key = field.key();
    od::value& v = field.value();
    const char* k = key.raw();
    bool ok = true;
    switch (k[0]) {
      case 'p':
        if (KeyIs(key, kPh)) {
          std::string_view s;
          bool is_string;
          if ((err = GetString(v, s, is_string))) break;
          // One-letter phases only: "Xtra" is not "X" (as for Python's ==).
          ev.ph = is_string && s.size() == 1 ? s[0] : (is_string && !s.empty() ? '?' : 0);
        } else if (KeyIs(key, kPid)) {
          ok = ParseId(v, ev.pid);
        }
        break;
      case 't':
        if (KeyIs(key, kTid)) {
          ok = ParseId(v, ev.tid);
        } else if (KeyIs(key, kTs)) {
          ts_text = NumberToken(v);
        }
        break;
      case 'n':
        if (KeyIs(key, kName)) {
          ev.name = {};
          if ((err = GetString(v, ev.name, ev.has_name))) break;
        }
        break;
      case 'c':
        if (KeyIs(key, kCat)) {
          has_cat_key = true;
          ev.cat = {};
          bool is_string;
          if ((err = GetString(v, ev.cat, is_string))) break;
        }
        break;
      case 'd':
        if (KeyIs(key, kDur)) ok = ParseDur(v, dur_as_double_, ev);
        break;
      case 'a':
        if (KeyIs(key, kArgs)) {
          // Every event's args are read: metadata names, Kineto devices and
          // streams, and the JAX scope (args.name) of kernels for regions.
          ok = ParseArgs(v, ev, err);
        }
        break;
      default:
        break;
    }
    if (err) return Fields::Drop(err);
    if (!ok) return Fields::BadJson();
  }
  if (!any) return Fields{Fields::kEmpty, {}};
  if (!ts_text.empty()) SetTs(ts_text, base, ev);
  CountEvent(ev, has_cat_key, counts);
  return Fields{Fields::kEvent, {}};
}

}  // namespace profwatch::parse
