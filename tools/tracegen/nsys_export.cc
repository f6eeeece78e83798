// Nsight Systems SQLite export writer: see nsys_export.h.
#include "nsys_export.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <unordered_map>

namespace profwatch::tracegen {

struct NsysExportWriter::Strings {
  std::unordered_map<std::string, int64_t> ids;
};

namespace {

// The kernel table of each generation, in its own column order (2020 as in
// ../shared/fixtures/real/nsys; 2024 moves the names first and adds
// greenContextId).
constexpr const char* kKernel2020 =
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, "
    "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
    "correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, "
    "shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER, "
    "registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, "
    "gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, "
    "blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL, "
    "dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, "
    "localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, "
    "graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER)";
constexpr const char* kKernel2024 =
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (shortName INTEGER NOT NULL, "
    "demangledName INTEGER, mangledName INTEGER, globalPid INTEGER, start INTEGER NOT NULL, "
    "end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, "
    "greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, "
    "launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, "
    "gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, "
    "blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, "
    "staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, "
    "localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL, "
    "gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, "
    "sharedMemoryLimitConfig INTEGER)";
constexpr const char* kNvtx =
    "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, "
    "rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, "
    "endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER, "
    "int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, "
    "floatValue REAL, jsonTextId INTEGER, jsonText TEXT)";

}  // namespace

std::unique_ptr<NsysExportWriter> NsysExportWriter::Create(const std::string& path,
                                                           NsysSchema schema, std::string* error,
                                                           bool nvtx_table, bool kernel_table) {
  std::remove(path.c_str());
  std::unique_ptr<NsysExportWriter> w(new NsysExportWriter());
  w->schema_ = schema;
  w->strings_ = std::make_unique<Strings>();
  if (sqlite3_open(path.c_str(), &w->db_) != SQLITE_OK) {
    if (error) *error = "cannot create " + path;
    return nullptr;
  }
  bool ok =
      w->Exec("PRAGMA journal_mode=DELETE") &&
      w->Exec("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)") &&
      w->Exec("CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT)");
  if (ok && schema == NsysSchema::k2024) {
    ok = w->Exec("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)") &&
         w->Exec("INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.11.1')");
  }
  if (ok && kernel_table) ok = w->Exec(schema == NsysSchema::k2020 ? kKernel2020 : kKernel2024);
  if (ok && nvtx_table) ok = w->Exec(kNvtx);
  ok = ok && w->Exec(
                 "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER "
                 "NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId "
                 "INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId "
                 "INTEGER)");
  ok = ok && w->Exec("BEGIN");
  const char* kernel_insert =
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, "
      "correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, "
      "gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, "
      "localMemoryPerThread, localMemoryTotal, gridId) "
      "VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, 32, 128, 1, 1, 256, 1, 1, 0, 0, 0, 0, ?)";
  if (ok && kernel_table) {
    ok = sqlite3_prepare_v2(w->db_, kernel_insert, -1, &w->kernel_, nullptr) == SQLITE_OK;
  }
  if (ok && nvtx_table) {
    ok = sqlite3_prepare_v2(w->db_,
                            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, "
                            "textId) VALUES (?, ?, 59, ?, ?, ?)",
                            -1, &w->range_, nullptr) == SQLITE_OK;
  }
  ok = ok && sqlite3_prepare_v2(w->db_,
                                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, "
                                "globalTid, correlationId, nameId, returnValue) VALUES (?, ?, 1, "
                                "?, ?, 0, 0)",
                                -1, &w->runtime_, nullptr) == SQLITE_OK;
  ok = ok && sqlite3_prepare_v2(w->db_, "INSERT INTO StringIds (id, value) VALUES (?, ?)", -1,
                                &w->string_, nullptr) == SQLITE_OK;
  if (!ok) {
    if (error) *error = std::string("writing ") + path + ": " + sqlite3_errmsg(w->db_);
    return nullptr;
  }
  return w;
}

NsysExportWriter::~NsysExportWriter() {
  sqlite3_finalize(kernel_);
  sqlite3_finalize(range_);
  sqlite3_finalize(runtime_);
  sqlite3_finalize(string_);
  sqlite3_close(db_);
}

bool NsysExportWriter::Exec(const std::string& sql) {
  return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK;
}

int64_t NsysExportWriter::StringId(const std::string& s) {
  auto [it, added] = strings_->ids.try_emplace(s, static_cast<int64_t>(strings_->ids.size()) + 1);
  if (added) {
    sqlite3_reset(string_);
    sqlite3_bind_int64(string_, 1, it->second);
    sqlite3_bind_text(string_, 2, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    if (sqlite3_step(string_) != SQLITE_DONE) return -1;
  }
  return it->second;
}

bool NsysExportWriter::AddKernel(const NsysKernel& k) {
  if (kernel_ == nullptr) return false;
  const int64_t short_id = StringId(k.short_name);
  const int64_t demangled_id = StringId(k.demangled_name.empty() ? k.short_name : k.demangled_name);
  sqlite3_reset(kernel_);
  sqlite3_bind_int64(kernel_, 1, k.start_ns);
  sqlite3_bind_int64(kernel_, 2, k.end_ns);
  sqlite3_bind_int64(kernel_, 3, k.device_id);
  sqlite3_bind_int64(kernel_, 4, k.stream_id);
  sqlite3_bind_int64(kernel_, 5, ++correlation_);
  sqlite3_bind_int64(kernel_, 6, NsysGlobalPid(k.pid));
  sqlite3_bind_int64(kernel_, 7, demangled_id);
  sqlite3_bind_int64(kernel_, 8, short_id);
  sqlite3_bind_int64(kernel_, 9, correlation_);
  return sqlite3_step(kernel_) == SQLITE_DONE;
}

bool NsysExportWriter::AddRange(const NsysRange& r) {
  if (range_ == nullptr) return false;
  sqlite3_reset(range_);
  sqlite3_bind_int64(range_, 1, r.start_ns);
  if (r.end_ns) {
    sqlite3_bind_int64(range_, 2, *r.end_ns);
  } else {
    sqlite3_bind_null(range_, 2);
  }
  if (r.text_as_string_id) {
    sqlite3_bind_null(range_, 3);
    sqlite3_bind_int64(range_, 5, StringId(r.text));
  } else {
    sqlite3_bind_text(range_, 3, r.text.data(), static_cast<int>(r.text.size()), SQLITE_TRANSIENT);
    sqlite3_bind_null(range_, 5);
  }
  sqlite3_bind_int64(range_, 4, NsysGlobalTid(r.pid, r.pid));
  return sqlite3_step(range_) == SQLITE_DONE;
}

bool NsysExportWriter::AddRuntime(int64_t pid, int64_t start_ns, int64_t end_ns,
                                  int64_t correlation) {
  sqlite3_reset(runtime_);
  sqlite3_bind_int64(runtime_, 1, start_ns);
  sqlite3_bind_int64(runtime_, 2, end_ns);
  sqlite3_bind_int64(runtime_, 3, NsysGlobalTid(pid, pid));
  sqlite3_bind_int64(runtime_, 4, correlation);
  return sqlite3_step(runtime_) == SQLITE_DONE;
}

bool NsysExportWriter::Finish(std::string* error) {
  if (!Exec("COMMIT")) {
    if (error) *error = sqlite3_errmsg(db_);
    return false;
  }
  return true;
}

bool WriteSyntheticNsysExport(const NsysSynthetic& p, const std::string& path, std::string* error) {
  auto w = NsysExportWriter::Create(path, p.schema, error);
  if (!w) return false;
  static const char* kCompute[] = {
      "void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn>(Params)",
      "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)",
      "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64>>(Flash_fwd_params)",
      "void at::native::layer_norm_kernel<float, float>(int, float, float const*)",
      "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(float)"};
  uint64_t state = p.seed * 6364136223846793005ULL + 1442695040888963407ULL;
  auto next = [&state](uint64_t bound) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % bound;
  };
  const int ranks = std::max(1, p.ranks);
  const int steps = std::max(1, p.steps);
  const int64_t per_step = std::max<int64_t>(2, p.kernels / ranks / steps);
  bool ok = true;
  for (int r = 0; r < ranks && ok; ++r) {
    const int rank = p.first_rank + r;
    const int64_t pid = 4000 + rank;
    ok = w->AddRange(
        {1'000, 2'000, pid,
         "rank=" + std::to_string(rank) + "; pp=0 dp=" + std::to_string(rank) + " tp=0", false});
    // NCCL init before cudaProfilerStart: negative start, never counted.
    ok = ok && w->AddKernel({-5'000'000, -4'000'000, pid, rank, 20,
                             "ncclDevKernel_AllReduce_Sum_f32_RING_LL", ""});
    for (int s = 0; s < steps && ok; ++s) {
      const int64_t step_start = 10'000'000 + s * p.step_ns;
      ok = w->AddRange(
          {step_start, step_start + p.step_ns - 1'000, pid, "step " + std::to_string(s), true});
      const int64_t slot = p.step_ns / (per_step + 1);
      for (int64_t k = 0; k < per_step && ok; ++k) {
        const int64_t start = step_start + k * slot + static_cast<int64_t>(next(slot / 4 + 1));
        const int64_t len = slot / 2 + static_cast<int64_t>(next(slot / 3 + 1));
        if (k % 8 == 7) {  // a collective on its own stream, overlapping compute
          ok = w->AddKernel(
              {start, start + len, pid, rank, 20, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
               "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"});
        } else {
          ok = w->AddKernel({start, start + len, pid, rank, 7, "kernel", kCompute[next(5)]});
        }
      }
    }
  }
  if (!ok) {
    if (error) *error = "writing " + path + " failed";
    return false;
  }
  return w->Finish(error);
}

}  // namespace profwatch::tracegen
