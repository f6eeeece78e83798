// Writes Nsight Systems SQLite exports (`nsys export --type sqlite`) of
// either schema generation, row by row, for tests and benchmarks. Only the
// tables and columns profwatch reads are meaningful; the other columns of
// CUPTI_ACTIVITY_KIND_KERNEL are filled as nsys would (NOT NULL ones with 0),
// in each generation's own order, so a reader that goes by position fails.
// Thread-safety: one writer per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace profwatch::tracegen {

enum class NsysSchema {
  k2020,  // no greenContextId column, no META_DATA_EXPORT table
  k2024,  // schema 3.x: greenContextId, META_DATA_EXPORT, columns reordered
};

// The global ids nsys writes: pid (and tid) packed into one integer.
inline int64_t NsysGlobalPid(int64_t pid) { return (int64_t{1} << 48) + pid * 0x1000000; }
inline int64_t NsysGlobalTid(int64_t pid, int64_t tid) { return NsysGlobalPid(pid) + tid; }

struct NsysKernel {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t pid = 0;
  int64_t device_id = 0;
  int64_t stream_id = 7;
  std::string short_name;
  std::string demangled_name;  // empty: same as short_name
};

struct NsysRange {
  int64_t start_ns = 0;
  std::optional<int64_t> end_ns;  // nullopt: an instant mark
  int64_t pid = 0;
  std::string text;
  bool text_as_string_id = false;  // registered string: text NULL, textId set
};

class NsysExportWriter {
 public:
  // Creates `path` (replacing it). `nvtx_table`: whether NVTX_EVENTS exists.
  // `kernel_table`: whether CUPTI_ACTIVITY_KIND_KERNEL exists.
  static std::unique_ptr<NsysExportWriter> Create(const std::string& path, NsysSchema schema,
                                                  std::string* error, bool nvtx_table = true,
                                                  bool kernel_table = true);
  ~NsysExportWriter();

  bool AddKernel(const NsysKernel& k);
  bool AddRange(const NsysRange& r);
  // The correlationId the last AddKernel wrote.
  int64_t last_correlation() const { return correlation_; }
  // A CUDA runtime call (CUPTI_ACTIVITY_KIND_RUNTIME) on process pid's main
  // thread (the thread AddRange writes to) that launched the kernel with
  // `correlation`.
  bool AddRuntime(int64_t pid, int64_t start_ns, int64_t end_ns, int64_t correlation);
  // Commits and closes; false (with `error`) on failure.
  bool Finish(std::string* error);

 private:
  NsysExportWriter() = default;
  int64_t StringId(const std::string& s);
  bool Exec(const std::string& sql);

  sqlite3* db_ = nullptr;
  sqlite3_stmt* kernel_ = nullptr;
  sqlite3_stmt* range_ = nullptr;
  sqlite3_stmt* runtime_ = nullptr;
  sqlite3_stmt* string_ = nullptr;
  NsysSchema schema_ = NsysSchema::k2020;
  struct Strings;
  std::unique_ptr<Strings> strings_;
  int64_t correlation_ = 0;
};

// A training-like export for benchmarks and demos: `ranks` processes with
// one GPU each (device_id = rank), `steps` NVTX "step K" ranges, a
// "rank=N; ..." range first per process, compute kernels on stream 7 and
// NCCL kernels on stream 20 that partly overlap them, `kernels` rows in all
// (plus a few negative-start NCCL init rows). Deterministic in `seed`.
struct NsysSynthetic {
  NsysSchema schema = NsysSchema::k2024;
  int ranks = 8;
  int first_rank = 0;
  int steps = 3;
  int64_t kernels = 1000;
  int64_t step_ns = 100'000'000;
  uint64_t seed = 1;
};
bool WriteSyntheticNsysExport(const NsysSynthetic& p, const std::string& path, std::string* error);

}  // namespace profwatch::tracegen
