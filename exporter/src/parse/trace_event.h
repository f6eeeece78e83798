// The parsed form of one trace event, as handed to an EventSink. All views
// (string_view members) point into parser-owned buffers and are valid only
// for the duration of the OnEvent call: intern what you keep.
#pragma once

#include <cstdint>
#include <string_view>

namespace profwatch::parse {

// pid/tid values come as numbers or strings ("Spans", "stream 7"); JSON null
// and a missing key are both kMissing (Python's None, which drill compat needs).
enum class IdKind : uint8_t { kMissing, kInt, kString, kOther };

struct Id {
  IdKind kind = IdKind::kMissing;
  int64_t num = 0;       // kInt (also a float with an integral value, e.g. 1.0)
  std::string_view str;  // kString: the unescaped text; kOther: raw JSON token
  bool operator==(const Id& o) const { return kind == o.kind && num == o.num && str == o.str; }
};

// Times are exact integers in picoseconds, parsed from the decimal text (never
// through a double), so float noise and epoch-sized microsecond timestamps
// keep their precision. `ts_ps` is relative to the file's time base
// (ParseSummary::time_base_us), chosen by the parser from the first timestamp.
struct TraceEvent {
  std::string_view name;
  std::string_view cat;  // empty when missing (JAX never writes it)
  Id pid;
  Id tid;
  int64_t ts_ps = 0;
  int64_t dur_ps = 0;
  // dur as a double (as Python's json parses it); 0 if missing, and 0 when
  // the parser was asked not to compute it (ParseOptions::dur_as_double).
  double dur_us = 0.0;
  // Selected args (all other args are skipped unparsed):
  std::string_view args_name;  // args.name when a string (metadata names, JAX scopes)
  // args.hlo_module when a string: the XLA module a JAX kernel belongs to
  // (placed by the module's schedule when it has no scope, hlo_schedule.h).
  std::string_view args_hlo_module;
  // Kineto operator shapes (record_shapes=True), for FLOP counting: the raw
  // JSON arrays of args["Input Dims"] and args["Concrete Inputs"], and
  // args["External id"], which links an operator to the kernels it launched.
  std::string_view args_input_dims;
  std::string_view args_concrete_inputs;
  // args["Input type"] (the raw JSON array: "c10::BFloat16", "float", ...),
  // the element types of a collective operator's tensors.
  std::string_view args_input_type;
  int64_t args_external_id = 0;
  // args.correlation: a Kineto kernel's and its cuda_runtime launch's shared
  // id (the launch is on the host thread that ran the launching operator);
  // -1 when missing or not a non-negative integer.
  int64_t args_correlation = -1;
  // Communication kernels' metadata, for the collective figures
  // (aggregate/collectives.h): Kineto's args "Collective name", "dtype",
  // "In msg nelems", "Out msg nelems" and "Group size" (PyTorch 2.1 and
  // later), and a JAX kernel's args.hlo_op (the HLO instruction). Counts
  // are -1 when missing or not a non-negative integer. "Process Group
  // Description" and "Process Group Ranks" (a string, "[0, 1]") name the
  // call's process group.
  std::string_view args_collective;
  std::string_view args_dtype;
  std::string_view args_pg_desc;
  std::string_view args_pg_ranks;
  std::string_view args_hlo_op;
  int64_t args_in_nelems = -1;
  int64_t args_out_nelems = -1;
  int64_t args_group_size = -1;
  // What a memory operation moved: Kineto's args.bytes (CUPTI's count of a
  // memcpy or memset; -1 when missing or not a non-negative integer), and
  // JAX's args.memcpy_details / args.Memset_details text ("... size:N ..." /
  // "... num_bytes:N ..."), parsed in aggregate/.
  int64_t args_bytes = -1;
  std::string_view args_memop_details;
  int64_t args_device = 0;  // Kineto args.device
  int64_t args_stream = 0;  // Kineto args.stream
  char ph = 0;              // 'X', 'M', 'B', ...; 0 when missing
  bool has_name = false;    // "name" present and a string
  bool has_ts = false;
  bool has_dur = false;    // "dur" present and a number
  bool dur_exact = false;  // dur_ps valid (false on overflow of int64 ps)
  bool has_args_device = false;
  bool has_args_stream = false;
  bool has_args_external_id = false;

  // Back to the defaults above, field by field: GCC compiles
  // `*this = TraceEvent{}` to a `rep stos` over the whole event. No
  // chained `a = b = {}` either: that reads back what it just stored.
  void Reset() {
    name = {};
    cat = {};
    args_name = {};
    args_hlo_module = {};
    args_input_dims = {};
    args_concrete_inputs = {};
    args_input_type = {};
    args_external_id = 0;
    has_args_external_id = false;
    args_correlation = -1;
    args_collective = {};
    args_dtype = {};
    args_pg_desc = {};
    args_pg_ranks = {};
    args_hlo_op = {};
    args_in_nelems = -1;
    args_out_nelems = -1;
    args_group_size = -1;
    args_bytes = -1;
    args_memop_details = {};
    pid = Id{};
    tid = Id{};
    ts_ps = 0;
    dur_ps = 0;
    args_device = 0;
    args_stream = 0;
    dur_us = 0.0;
    ph = 0;
    has_name = false;
    has_ts = false;
    has_dur = false;
    dur_exact = false;
    has_args_device = false;
    has_args_stream = false;
  }
};
// A new field needs a line in Reset() (and TraceEventTest.ResetRestoresEveryField).
static_assert(sizeof(TraceEvent) == 368);

// What kind of trace a file is, decided from its content.
enum class TraceSchema : uint8_t {
  kUnknown,
  kJaxTraceEvents,  // XLA trace-events JSON (no "cat"; process_name /device:GPU:N)
  kKineto,          // PyTorch profiler (schemaVersion / "cat" on events)
  kXPlane,          // XSpace protobuf
  kNsys,            // Nsight Systems SQLite export (parse/nsys_reader.h)
  kRocprof,         // rocprofv3 JSON output (parse/rocprof_reader.h)
};
// "jax", "kineto", "xplane", "nsys", "rocprof", "unknown"
std::string_view TraceSchemaName(TraceSchema s);

// The categories of the events the nsys and rocprof readers emit: a kernel (or a memory
// operation) on device (pid, args_device), stream tid; an NVTX step range of process pid whose
// name is the step number.
inline constexpr std::string_view kNsysKernelCat = "nsys_kernel";
inline constexpr std::string_view kNsysMemopCat = "nsys_memop";  // memcpy/memset, same device
inline constexpr std::string_view kNsysStepCat = "nsys_step";

}  // namespace profwatch::parse
