#include "trace_model.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <queue>
#include <tuple>

namespace profwatch::tracegen {
namespace {

// ---------------------------------------------------------------- names ---

struct KernelName {
  const char* name;
  const char* hlo_op;
  double weight;  // relative duration
  // The collective kind a reader must find for a communication kernel (its
  // hlo_op names it; deep_ep's custom calls name none, the kernel name says
  // all_to_all for its dispatch and combine); null for every other kernel.
  const char* collective = nullptr;
};

// AMD (ROCm JAX) kernels as they appear in real traces.
constexpr KernelName kAmdCompute[] = {
    {"input_scatter_fusion_2.kd", "input_scatter_fusion.2", 0.6},
    {"loop_add_fusion.kd", "loop_add_fusion", 0.3},
    {"loop_multiply_fusion_3.kd", "loop_multiply_fusion.3", 0.3},
    {"loop_convert_fusion_1.kd", "loop_convert_fusion.1", 0.25},
    {"loop_transpose_fusion.kd", "loop_transpose_fusion", 0.4},
    {"loop_select_fusion_7.kd", "loop_select_fusion.7", 0.2},
    {"input_reduce_fusion_4.kd", "input_reduce_fusion.4", 0.5},
    {"Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64_MI16x16x1_SN_LDSB1_AFC1_"
     "AFEM1_ASEM1_CLR1_CADS0_EPS0_GRVWA8_GRVWB8_GSUAMB_IU1_K1_LBSPPA2048_LBSPPB2048_"
     "LPA16_LPB16_MIAV1_MIWT8_8_MO40_NTn1_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_SIA3_SS1_"
     "SVW8_TLDS1_USL1_VWA8_VWB2_WSGRA0_WSGRB0_WS64_WG32_8_1",
     "custom-call.12", 4.0},
    {"Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI16x16x1_SN_LDSB1_AFC1_"
     "GRVWA8_GRVWB8_LPA16_LPB16_MIAV1_MIWT4_4_NTn1_NLCA1_NLCB1_ONLL1_PGR2_PLR1_SIA3_"
     "WG32_8_1",
     "custom-call.7", 2.5},
    {"ck_tile::kentry<128, 1, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<"
     "ck_tile::BlockFmhaPipelineProblem<ck_tile::bf16_t, ck_tile::bf16_t, ck_tile::bf16_t, "
     "float, float, ck_tile::bf16_t, unsigned short, float, ck_tile::bf16_t, ck_tile::bf16_t>>>>",
     "custom-call.3", 3.0},
    {"aiter::fmha_fwd_hd128_bf16_causal_rtne_group", "custom-call.21", 3.2},
    {"__amd_rocclr_copyBuffer.kd", "copy.1", 0.2},
};
constexpr KernelName kAmdComm[] = {
    {"ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", "all-reduce-start.2", 3.0,
     "all_reduce"},
    {"RaggedAllToAllKernelImpl<ncclBfloat16, 8>", "ragged-all-to-all.1", 2.0, "all_to_all"},
    {"primus_turbo::deep_ep::intranode::dispatch<8, 768, 8192>", "custom-call.44", 1.5,
     "all_to_all"},
    {"primus_turbo::deep_ep::intranode::combine<ck_tile::bf16_t, 8, 768>", "custom-call.45", 1.5,
     "all_to_all"},
};
constexpr KernelName kAmdAux[] = {
    {"__amd_rocclr_copyBuffer.kd", "copy.3", 0.5},
    {"__amd_rocclr_fillBufferAligned.kd", "broadcast.2", 0.2},
    {"loop_dynamic_update_slice_fusion.kd", "loop_dynamic_update_slice_fusion", 1.0},
};

// NVIDIA (CUDA JAX) kernels.
constexpr KernelName kNvCompute[] = {
    {"void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_bf16_256x128_32x3_tn_align8>("
     "cutlass_80_tensorop_s1688gemm_bf16_256x128_32x3_tn_align8::Params)",
     "custom-call.12", 4.0},
    {"nvjet_tst_256x128_64x4_2x1_v_bz_coopA_TNT", "custom-call.8", 3.5},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_"
     "execute_segment_k_off_kernel__5x_cublas",
     "custom-call.9", 3.8},
    {"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
     "cutlass::bfloat16_t>, false, true, false, false, true, true, false>(Flash_fwd_params)",
     "custom-call.3", 3.0},
    {"loop_fusion", "loop_fusion", 0.3},
    {"loop_add_fusion", "loop_add_fusion", 0.3},
    {"input_reduce_fusion", "input_reduce_fusion", 0.5},
    {"loop_transpose_fusion_2", "loop_transpose_fusion.2", 0.4},
    {"loop_convert_fusion", "loop_convert_fusion", 0.25},
};
constexpr KernelName kNvComm[] = {
    {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "all-reduce-start.2", 3.0, "all_reduce"},
    {"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "all-gather-start.1", 2.0,
     "all_gather"},
    {"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "reduce-scatter.4", 2.0, "reduce_scatter"},
};
constexpr KernelName kNvMemcpy[] = {
    {"MemcpyD2D", "copy.4", 1.0},
    {"MemcpyH2D", "copy-start.1", 1.5},
    {"MemcpyD2H", "copy-start.2", 1.5},
    {"Memset", "broadcast.1", 0.3},
};
constexpr KernelName kNvAux[] = {
    {"loop_dynamic_update_slice_fusion", "loop_dynamic_update_slice_fusion", 1.0},
    {"void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_bf16_64x64_32x6_tn_align8>("
     "cutlass_80_tensorop_s1688gemm_bf16_64x64_32x6_tn_align8::Params)",
     "custom-call.30", 2.0},
};
constexpr KernelName kAmdHost[] = {
    {"hipLaunchKernel", "", 0.01},
    {"hipMemcpyDtoDAsync", "copy.1", 0.02},
    {"ExecuteOnLocalDevices", "", 1.0},
};
constexpr KernelName kNvHost[] = {
    {"cuLaunchKernel", "", 0.01},
    {"cuMemcpyDtoDAsync", "copy.1", 0.02},
    {"ExecuteOnLocalDevices", "", 1.0},
};

// Serial main-stream blockers (--blocker-us), in the order amd all-to-all,
// amd scatter, nvidia all-to-all, nvidia scatter. XLA's in-process ragged
// all-to-all is the C++ template stream_executor::gpu::RaggedAllToAllKernelImpl
// (ROCm traces show it demangled); for NVIDIA the name is the one XLA
// registers that kernel under, which says all_to_all and is not NCCL's.
// Distinct from the comm stream's names so the manifest's per-name figures
// single the blocker out.
constexpr KernelName kBlockers[] = {
    {"stream_executor::gpu::RaggedAllToAllKernelImpl<8l>", "ragged-all-to-all.3", 1.0,
     "all_to_all"},
    {"input_scatter_fusion.kd", "input_scatter_fusion", 1.0},
    {"ragged_all_to_all_kernel_uint16", "ragged-all-to-all.3", 1.0, "all_to_all"},
    {"input_scatter_fusion", "input_scatter_fusion", 1.0},
};

size_t BlockerIndex(Vendor vendor, BlockerKind kind) {
  return (vendor == Vendor::kAmd ? 0 : 2) + (kind == BlockerKind::kAllToAll ? 0 : 1);
}

using Table = std::vector<uint32_t>;  // indices into Names().all

// All names of both vendors in one index space (Event::name).
struct NameIndex {
  std::vector<const KernelName*> all;
  Table amd_compute, amd_comm, amd_aux, amd_host, nv_compute, nv_comm, nv_memcpy, nv_aux, nv_host;
  Table blockers;  // kBlockers, same order
  NameIndex() {
    Add(kAmdCompute, &amd_compute);
    Add(kAmdComm, &amd_comm);
    Add(kAmdAux, &amd_aux);
    Add(kAmdHost, &amd_host);
    Add(kNvCompute, &nv_compute);
    Add(kNvComm, &nv_comm);
    Add(kNvMemcpy, &nv_memcpy);
    Add(kNvAux, &nv_aux);
    Add(kNvHost, &nv_host);
    Add(kBlockers, &blockers);
  }
  template <size_t N>
  void Add(const KernelName (&a)[N], Table* t) {
    for (size_t i = 0; i < N; ++i) {
      t->push_back(static_cast<uint32_t>(all.size()));
      all.push_back(&a[i]);
    }
  }
};
const NameIndex& Names() {
  static const NameIndex names;
  return names;
}

// ----------------------------------------------------------------- rng ---

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t Next() {  // splitmix64: tiny, deterministic on every platform
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
};

uint64_t Mix(uint64_t a, uint64_t b) { return Rng(a * 0x100000001b3ULL ^ (b + 0x51ed27)).Next(); }

constexpr int64_t kNs = 1000;
constexpr int kHostPid = 701;

// -------------------------------------------------------------- streams ---

struct StreamSpec {
  int pid = 0;
  int64_t tid = 0;
  Role role = Role::kCompute;
  std::string thread_name;
  int64_t count = 0;        // events in the whole file
  double busy_share = 0.0;  // of kernel_fraction * step time
  Table table;
  uint64_t seed = 0;
  int64_t skew_ps = 0;    // device clock offset
  bool blockers = false;  // the device's compute stream: carries the blocker kernels
};

// A point on a stream's generated ("raw") timeline where everything at or
// after it moves `shift_ps` later: a step boundary (host stall) or the middle
// of a step (blocker). On device streams no event straddles a cut, so the
// shifted timeline has `shift_ps` of idle device time there.
struct Cut {
  int64_t raw_ps = 0;
  int64_t shift_ps = 0;
  bool blocker = false;
  int step = 0;
};

// Generates one stream's events in start order (starts never decrease).
class StreamGen {
 public:
  StreamGen(const FileParams& p, const StreamSpec& s, int64_t base_ps)
      : p_(p), s_(s), rng_(s.seed), base_ps_(base_ps) {
    step_ps_ = static_cast<int64_t>(std::llround(p.step_seconds * 1e12 / kNs)) * kNs;
    double mean = 0;
    for (uint32_t i : s.table) mean += Names().all[i]->weight;
    mean_weight_ = mean / static_cast<double>(s.table.size());
    // Cuts in raw-time order: the boundary before step k (k >= 1), then the
    // middle of step k. Host threads follow the same shifts (no drain).
    const int64_t half = step_ps_ / 2 / kNs * kNs;
    for (int k = 0; k < p.steps; ++k) {
      const int64_t start = base_ps_ + s_.skew_ps + step_ps_ * k;
      if (k > 0 && p.host_stall_ps > 0) cuts_.push_back({start, p.host_stall_ps, false, k});
      if (p.blocker_ps > 0) cuts_.push_back({start + half, p.blocker_ps, true, k});
    }
    drain_ = s_.role != Role::kHost;
    blocker_name_ = Names().blockers[BlockerIndex(p.vendor, p.blocker_kind)];
    StartStep(0);
  }

  // The next event of the stream on the final timeline (blockers inserted,
  // cuts applied), in start order.
  bool Next(Event* ev) {
    if (!have_raw_ && !raw_done_) {
      have_raw_ = NextRaw(&raw_);
      raw_done_ = !have_raw_;
    }
    // The blocker of a cut comes before the first raw event at or after it.
    if (s_.blockers) {
      while (next_blocker_ < cuts_.size() && !cuts_[next_blocker_].blocker) ++next_blocker_;
      if (next_blocker_ < cuts_.size() &&
          (!have_raw_ || raw_.ts_ps >= cuts_[next_blocker_].raw_ps)) {
        const Cut& c = cuts_[next_blocker_];
        int64_t before = 0;  // shifts of the cuts before this one
        for (size_t i = 0; i < next_blocker_; ++i) before += cuts_[i].shift_ps;
        ev->ts_ps = c.raw_ps + before;
        ev->dur_ps = c.shift_ps;
        ev->name = blocker_name_;
        ev->seq = seq_++;
        ev->step = c.step;
        ++next_blocker_;
        return true;
      }
    }
    if (!have_raw_) return false;
    have_raw_ = false;
    while (next_shift_ < cuts_.size() && cuts_[next_shift_].raw_ps <= raw_.ts_ps) {
      shift_ += cuts_[next_shift_].shift_ps;
      ++next_shift_;
    }
    *ev = raw_;
    ev->ts_ps += shift_;
    ev->seq = seq_++;
    int64_t k = (raw_.ts_ps - base_ps_ - s_.skew_ps) / step_ps_;
    ev->step = static_cast<int32_t>(std::clamp<int64_t>(k, 0, p_.steps - 1));
    return true;
  }

 private:
  // The generated timeline before cuts; on device streams an event that
  // would straddle a cut starts at the cut instead.
  bool NextRaw(Event* ev) {
    while (index_ == in_step_) {
      if (step_ + 1 >= p_.steps) return false;
      StartStep(step_ + 1);
    }
    uint32_t name = s_.table[rng_.Next() % s_.table.size()];
    const KernelName& k = *Names().all[name];
    double jitter = 0.5 + rng_.Uniform();
    int64_t dur = static_cast<int64_t>(mean_dur_ * k.weight / mean_weight_ * jitter / kNs) * kNs;
    dur = std::max<int64_t>(dur, kNs);
    // Zero-length events (written as 1e-06 us = 1 ps by the XLA writer).
    bool zero_ok = s_.role == Role::kMemcpy || s_.role == Role::kAux ||
                   (p_.vendor == Vendor::kAmd && s_.role == Role::kCompute);
    if (zero_ok && rng_.Next() % 250 == 0) dur = 1;
    int64_t gap = static_cast<int64_t>(mean_gap_ * 2.0 * rng_.Uniform() / kNs) * kNs;
    int64_t start = cursor_ + gap;
    // ROCm: consecutive kernels on one stream overlap by tens to hundreds of ns.
    if (p_.vendor == Vendor::kAmd && s_.role != Role::kHost && rng_.Next() % 40 == 0) {
      start = std::max(last_start_, cursor_ - static_cast<int64_t>(10 + rng_.Next() % 290) * kNs);
    }
    start = std::max(start, last_start_);
    if (drain_) {
      while (next_drain_ < cuts_.size() && cuts_[next_drain_].raw_ps <= start) ++next_drain_;
      while (next_drain_ < cuts_.size() && cuts_[next_drain_].raw_ps < start + dur) {
        start = cuts_[next_drain_++].raw_ps;
      }
    }
    ev->ts_ps = start;
    ev->dur_ps = dur;
    ev->name = name;
    last_start_ = start;
    cursor_ = std::max(cursor_, start + dur);
    ++index_;
    return true;
  }

  void StartStep(int k) {
    step_ = k;
    index_ = 0;
    in_step_ = s_.count * (k + 1) / p_.steps - s_.count * k / p_.steps;
    int64_t step_start = base_ps_ + s_.skew_ps + step_ps_ * k;
    cursor_ = std::max(cursor_, step_start);
    if (in_step_ == 0) return;
    double busy = static_cast<double>(step_ps_) * p_.kernel_fraction * s_.busy_share;
    if (s_.role == Role::kHost) busy = static_cast<double>(step_ps_) * 0.3;
    busy = std::min(busy, static_cast<double>(step_ps_) * 0.98);
    mean_dur_ = busy / static_cast<double>(in_step_);
    // Spread the idle time so the stream ends near the step end.
    double remaining = static_cast<double>(step_start + step_ps_ - cursor_) - busy;
    mean_gap_ = std::max(0.0, remaining) / static_cast<double>(in_step_ + 1);
  }

  std::vector<Cut> cuts_;
  bool drain_ = false;
  uint32_t blocker_name_ = 0;
  size_t next_blocker_ = 0, next_shift_ = 0, next_drain_ = 0;
  int64_t shift_ = 0;
  Event raw_;
  bool have_raw_ = false, raw_done_ = false;

  const FileParams& p_;
  StreamSpec s_;
  Rng rng_;
  int64_t base_ps_;
  int64_t step_ps_ = 0;
  double mean_weight_ = 1;
  int step_ = 0;
  int64_t in_step_ = 0, index_ = 0;
  int64_t cursor_ = 0, last_start_ = 0;
  double mean_dur_ = 0, mean_gap_ = 0;
  uint32_t seq_ = 0;
};

struct Layout {
  std::vector<StreamSpec> streams;  // host streams first, then devices, by pid/tid
  int64_t base_ps = 0;
};

int64_t BlockerEvents(const FileParams& p) {
  return p.blocker_ps > 0 ? static_cast<int64_t>(p.gpus) * p.steps : 0;
}

Layout MakeLayout(const FileParams& p) {
  Layout layout;
  Rng rng(Mix(p.seed, 0xba5e));
  // Session-relative start of the first step: 1.0 to 1.5 ms (whole ns).
  layout.base_ps = (1000000 + static_cast<int64_t>(rng.Next() % 500000)) * kNs;
  bool amd = p.vendor == Vendor::kAmd;
  const NameIndex& n = Names();

  struct RoleInfo {
    Role role;
    double busy, count;
    Table table;
  };
  std::vector<RoleInfo> roles;
  for (int j = 0; j < p.streams; ++j) {
    if (j == 0) {
      Table t = amd ? n.amd_compute : n.nv_compute;
      if (p.streams == 1) {  // one stream: collectives run on it too
        const Table& comm = amd ? n.amd_comm : n.nv_comm;
        t.insert(t.end(), comm.begin(), comm.end());
      }
      roles.push_back({Role::kCompute, 10, 10, t});
    } else if (j == 1) {
      roles.push_back({Role::kComm, 4, 2, amd ? n.amd_comm : n.nv_comm});
    } else if (j == 2 && !amd) {
      roles.push_back({Role::kMemcpy, 1.5, 2, n.nv_memcpy});
    } else {
      roles.push_back({Role::kAux, 1, 1.5, amd ? n.amd_aux : n.nv_aux});
    }
  }
  double busy_total = 0, count_total = 0;
  for (const auto& r : roles) busy_total += r.busy, count_total += r.count;

  // Event counts: exact when --events is given.
  int64_t host_total, device_total;
  if (p.events >= 0) {
    host_total = p.events / 20;
    // The blocker kernels count towards the exact total (CheckParams: they fit).
    device_total = p.events - host_total - BlockerEvents(p);
  } else {
    host_total = static_cast<int64_t>(p.steps) * std::max<int64_t>(2, p.kernels_per_step / 20);
    device_total = p.kernels_per_step * p.steps * p.gpus;
  }

  // Host threads (pid 701).
  const int64_t host_tids[] = {1083, 2298405065, 2998969441};
  const char* host_names[] = {"Host Threads/1083", "python",
                              "tf_pjrt_thread_pool/4747829982129071201"};
  for (int h = 0; h < 3; ++h) {
    StreamSpec s;
    s.pid = kHostPid;
    s.tid = host_tids[h];
    s.role = Role::kHost;
    s.thread_name = host_names[h];
    s.count = host_total * (h + 1) / 3 - host_total * h / 3;
    s.table = amd ? n.amd_host : n.nv_host;
    s.seed = Mix(p.seed, 7000 + h);
    layout.streams.push_back(s);
  }

  for (int d = 0; d < p.gpus; ++d) {
    int64_t dev_events = device_total * (d + 1) / p.gpus - device_total * d / p.gpus;
    int64_t skew = (d * 1300 + static_cast<int64_t>(rng.Next() % 900)) * kNs;
    int64_t assigned = 0;
    for (int j = 0; j < p.streams; ++j) {
      StreamSpec s;
      s.pid = d + 1;
      s.role = roles[j].role;
      int id = amd ? 16 + j : (j == 0 ? 7 : 13 + j);
      s.tid = id;
      if (amd) {
        s.thread_name = "Stream #" + std::to_string(id) + (j < 2 ? "(Kernel)" : "");
      } else {
        static const char* kActs[] = {"(Compute,MemcpyH2D,MemcpyD2H)", "(Compute)",
                                      "(MemcpyD2H,MemcpyD2D,Compute,Memset)", "(Compute,Memset)"};
        s.thread_name = "Stream #" + std::to_string(id) + kActs[std::min(j, 3)];
      }
      s.count = j == 0 ? 0
                       : static_cast<int64_t>(static_cast<double>(dev_events) * roles[j].count /
                                              count_total);
      assigned += s.count;
      s.busy_share = roles[j].busy / busy_total;
      s.table = roles[j].table;
      s.seed = Mix(p.seed, static_cast<uint64_t>(d) * 1000 + j + 1);
      s.skew_ps = skew;
      s.blockers = j == 0 && p.blocker_ps > 0;
      layout.streams.push_back(s);
    }
    // The compute stream takes the remainder so the total is exact.
    layout.streams[layout.streams.size() - p.streams].count = dev_events - assigned;
  }
  return layout;
}

// ------------------------------------------------------------ numbers ---

}  // namespace

bool ParseMicrosExact(std::string_view text, int64_t* ps) {
  size_t i = 0;
  bool neg = false;
  if (i < text.size() && text[i] == '-') neg = true, ++i;
  __int128 mant = 0;
  int digits = 0, frac = 0;
  bool dot = false, any = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c >= '0' && c <= '9') {
      any = true;
      if (digits < 36) {
        mant = mant * 10 + (c - '0');
        if (mant != 0) ++digits;
        if (dot) ++frac;
      } else if (!dot) {
        return false;  // absurdly long integer part
      }
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (!any) return false;
  int exp = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool eneg = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) eneg = text[i] == '-', ++i;
    if (i == text.size()) return false;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      exp = exp * 10 + (text[i] - '0');
      if (exp > 400) return false;
    }
    if (eneg) exp = -exp;
  }
  if (i != text.size()) return false;
  int p10 = exp + 6 - frac;  // value in ps = mant * 10^p10
  __int128 v;
  if (p10 >= 0) {
    if (p10 > 20) return false;
    v = mant;
    for (int k = 0; k < p10; ++k) v *= 10;
  } else {
    if (-p10 > 37) {
      v = 0;
    } else {
      __int128 div = 1;
      for (int k = 0; k < -p10; ++k) div *= 10;
      v = mant / div;
      __int128 rem = mant % div;
      if (rem * 2 > div || (rem * 2 == div && (v & 1))) ++v;
    }
  }
  if (v > INT64_MAX) return false;
  *ps = static_cast<int64_t>(neg ? -v : v);
  return true;
}

namespace {
// REQUIRES: buf has 64 bytes. Returns the length written.
size_t FormatMicrosTo(int64_t ps, char* buf) {
  double us = static_cast<double>(ps) * 1e-6;
  for (int precision : {15, 17}) {
    auto r = std::to_chars(buf, buf + 64, us, std::chars_format::general, precision);
    std::string_view text(buf, r.ptr - buf);
    double back = 0;
    std::from_chars(text.data(), text.data() + text.size(), back);
    if (precision == 17 || back == us) {
      int64_t check = 0;
      if (ParseMicrosExact(text, &check) && check == ps) return text.size();
      break;
    }
  }
  // The double cannot carry this picosecond (huge times): exact decimal.
  return static_cast<size_t>(std::snprintf(buf, 64, "%s%lld.%06lld", ps < 0 ? "-" : "",
                                           static_cast<long long>(std::llabs(ps) / 1000000),
                                           static_cast<long long>(std::llabs(ps) % 1000000)));
}
}  // namespace

std::string FormatMicros(int64_t ps) {
  char buf[64];
  return std::string(buf, FormatMicrosTo(ps, buf));
}

namespace {

// ------------------------------------------------------------- writing ---

class Sink {
 public:
  bool Open(const std::string& path, const FileParams& p, std::string* error) {
    path_ = path;
    if (p.plain) {
      file_ = std::fopen(path.c_str(), "wb");
      if (file_ == nullptr) return Fail(error);
    } else {
      char mode[8];
      std::snprintf(mode, sizeof(mode), "wb%d", std::clamp(p.gzip_level, 0, 9));
      gz_ = gzopen(path.c_str(), mode);
      if (gz_ == nullptr) return Fail(error);
      gzbuffer(gz_, 1 << 20);
    }
    buf_.reserve(kFlush + 4096);
    return true;
  }
  void Append(std::string_view s) {
    buf_.append(s);
    if (buf_.size() >= kFlush) Flush();
  }
  bool Close(std::string* error) {
    Flush();
    bool ok = ok_;
    if (file_ != nullptr) ok = (std::fclose(file_) == 0) && ok;
    if (gz_ != nullptr) ok = (gzclose(gz_) == Z_OK) && ok;
    file_ = nullptr;
    gz_ = nullptr;
    if (!ok) return Fail(error);
    return true;
  }
  uint64_t written() const { return written_; }

 private:
  static constexpr size_t kFlush = 1 << 20;
  void Flush() {
    if (buf_.empty()) return;
    if (file_ != nullptr)
      ok_ = ok_ && std::fwrite(buf_.data(), 1, buf_.size(), file_) == buf_.size();
    if (gz_ != nullptr)
      ok_ = ok_ && gzwrite(gz_, buf_.data(), static_cast<unsigned>(buf_.size())) ==
                       static_cast<int>(buf_.size());
    written_ += buf_.size();
    buf_.clear();
  }
  bool Fail(std::string* error) {
    *error = "cannot write " + path_ + ": " + std::strerror(errno);
    return false;
  }
  std::string path_;
  FILE* file_ = nullptr;
  gzFile gz_ = nullptr;
  std::string buf_;
  bool ok_ = true;
  uint64_t written_ = 0;
};

// Total order used for the cap ("first N events by time").
using Key = std::tuple<int64_t, int, int64_t, uint32_t>;  // ts, pid, tid, seq

struct HeapItem {
  Key key;
  size_t stream;
  Event ev;
  bool operator>(const HeapItem& o) const { return key > o.key; }
};

// Key of the last event kept under the cap, or nullopt when nothing is cut.
std::optional<Key> CapThreshold(const FileParams& p, const Layout& layout, uint64_t* total) {
  std::vector<std::unique_ptr<StreamGen>> gens;
  std::priority_queue<HeapItem, std::vector<HeapItem>, std::greater<>> heap;
  for (size_t i = 0; i < layout.streams.size(); ++i) {
    gens.push_back(std::make_unique<StreamGen>(p, layout.streams[i], layout.base_ps));
    Event ev;
    const StreamSpec& s = layout.streams[i];
    if (gens[i]->Next(&ev)) heap.push({Key{ev.ts_ps, s.pid, s.tid, ev.seq}, i, ev});
  }
  uint64_t n = 0;
  std::optional<Key> last;
  while (!heap.empty()) {
    HeapItem top = heap.top();
    heap.pop();
    ++n;
    if (p.cap >= 0 && n == static_cast<uint64_t>(p.cap)) last = top.key;
    Event ev;
    const StreamSpec& s = layout.streams[top.stream];
    if (gens[top.stream]->Next(&ev))
      heap.push({Key{ev.ts_ps, s.pid, s.tid, ev.seq}, top.stream, ev});
  }
  *total = n;
  if (p.cap >= 0 && n > static_cast<uint64_t>(p.cap)) {
    if (p.cap == 0) return Key{INT64_MIN, 0, 0, 0};
    return last;
  }
  return std::nullopt;
}

bool Kept(const std::optional<Key>& threshold, const StreamSpec& s, const Event& ev) {
  return !threshold || Key{ev.ts_ps, s.pid, s.tid, ev.seq} <= *threshold;
}

// Disjoint intervals in start order.
using Runs = std::vector<std::pair<int64_t, int64_t>>;

// Adds [start, end) to runs fed in start order; empty intervals take no part.
void AppendRun(Runs& runs, int64_t start, int64_t end) {
  if (end <= start) return;
  if (!runs.empty() && start <= runs.back().second) {
    runs.back().second = std::max(runs.back().second, end);
  } else {
    runs.emplace_back(start, end);
  }
}

// Length of the part of `a` outside `b` (both disjoint and sorted).
int64_t LengthNotCovered(const Runs& a, const Runs& b) {
  int64_t out = 0;
  size_t j = 0;
  for (const auto& [s, e] : a) {
    int64_t at = s;
    while (j < b.size() && b[j].second <= at) ++j;
    for (size_t k = j; k < b.size() && b[k].first < e; ++k) {
      if (b[k].first > at) out += b[k].first - at;
      at = std::max(at, b[k].second);
      if (at >= e) break;
    }
    if (at < e) out += e - at;
  }
  return out;
}

// Device statistics from a merge of the device's streams in start order.
void DeviceStatsFor(const FileParams& p, const Layout& layout, int pid,
                    const std::optional<Key>& threshold, FileStats* stats) {
  DeviceStats d;
  d.pid = pid;
  d.name = "/device:GPU:" + std::to_string(pid - 1);
  std::vector<std::unique_ptr<StreamGen>> gens;
  std::vector<size_t> idx;
  std::priority_queue<HeapItem, std::vector<HeapItem>, std::greater<>> heap;
  auto push_next = [&](size_t g) {
    Event ev;
    const StreamSpec& s = layout.streams[idx[g]];
    while (gens[g]->Next(&ev)) {
      if (Kept(threshold, s, ev)) {
        heap.push({Key{ev.ts_ps, s.pid, s.tid, ev.seq}, g, ev});
        return;
      }
    }
  };
  std::vector<bool> has_events;
  for (size_t i = 0; i < layout.streams.size(); ++i) {
    if (layout.streams[i].pid != pid) continue;
    idx.push_back(i);
    gens.push_back(std::make_unique<StreamGen>(p, layout.streams[i], layout.base_ps));
    has_events.push_back(false);
    ++d.streams;
    push_next(gens.size() - 1);
  }
  bool any = false;
  int64_t cur_start = 0, cur_end = 0;
  const auto& names = Names().all;
  const uint32_t blocker = Names().blockers[BlockerIndex(p.vendor, p.blocker_kind)];
  // Per step: first start and last end of the device's kept events.
  std::vector<int64_t> step_first(p.steps, INT64_MAX), step_last(p.steps, INT64_MIN);
  // Unions (coalesced as events arrive in start order) of the compute
  // kernels and of each collective kind's kernels, for exposed time.
  Runs compute_runs;
  std::map<std::string, Runs> coll_runs;
  while (!heap.empty()) {
    HeapItem top = heap.top();
    heap.pop();
    const Event& ev = top.ev;
    has_events[top.stream] = true;
    int64_t end = ev.ts_ps + ev.dur_ps;
    step_first[ev.step] = std::min(step_first[ev.step], ev.ts_ps);
    step_last[ev.step] = std::max(step_last[ev.step], end);
    if (p.blocker_ps > 0 && ev.name == blocker && layout.streams[idx[top.stream]].blockers) {
      d.blockers.push_back({ev.step, layout.streams[idx[top.stream]].tid, ev.ts_ps, ev.dur_ps});
    }
    ++d.kernel_launches;
    d.kernel_ps += ev.dur_ps;
    if (const char* kind = names[ev.name]->collective) {
      CollectiveTruth& c = stats->collectives[kind];
      ++c.calls;
      c.ps += ev.dur_ps;
      AppendRun(coll_runs[kind], ev.ts_ps, end);
    } else if (layout.streams[idx[top.stream]].role != Role::kMemcpy) {
      AppendRun(compute_runs, ev.ts_ps, end);  // memcpy-stream events are memory ops
    }
    NameStats& ns = stats->kernels[names[ev.name]->name];
    ++ns.launches;
    ns.ps += ev.dur_ps;
    if (!any) {
      any = true;
      d.first_ts_ps = ev.ts_ps;
      d.last_end_ps = end;
      cur_start = ev.ts_ps;
      cur_end = end;
    } else {
      d.last_end_ps = std::max(d.last_end_ps, end);
      if (ev.ts_ps > cur_end) {
        d.busy_ps += cur_end - cur_start;
        cur_start = ev.ts_ps;
        cur_end = end;
      } else {
        cur_end = std::max(cur_end, end);
      }
    }
    push_next(top.stream);
  }
  if (any) {
    d.busy_ps += cur_end - cur_start;
    d.span_ps = d.last_end_ps - d.first_ts_ps;
  }
  for (bool h : has_events) d.streams_with_events += h ? 1 : 0;
  for (const auto& [kind, runs] : coll_runs) {
    stats->collectives[kind].exposed_ps += LengthNotCovered(runs, compute_runs);
  }
  if (p.host_stall_ps > 0) {
    // Gap before step k: last end of steps < k to first start of steps >= k.
    std::vector<int64_t> first_from(p.steps + 1, INT64_MAX);
    for (int k = p.steps - 1; k >= 0; --k)
      first_from[k] = std::min(first_from[k + 1], step_first[k]);
    int64_t last_before = INT64_MIN;
    for (int k = 1; k < p.steps; ++k) {
      last_before = std::max(last_before, step_last[k - 1]);
      if (last_before != INT64_MIN && first_from[k] != INT64_MAX) {
        d.step_gaps.push_back({k, last_before, first_from[k]});
      }
    }
  }
  stats->device_events += d.kernel_launches;
  stats->devices.push_back(std::move(d));
}

void AppendInt(std::string* out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

}  // namespace

const char* BlockerName(Vendor vendor, BlockerKind kind) {
  return kBlockers[BlockerIndex(vendor, kind)].name;
}

const char* BlockerHloOp(Vendor vendor, BlockerKind kind) {
  return kBlockers[BlockerIndex(vendor, kind)].hlo_op;
}

std::string CheckParams(const FileParams& p) {
  if (p.blocker_ps < 0 || p.host_stall_ps < 0)
    return "--blocker-us and --host-stall-us must be >= 0";
  if (p.events >= 0 && p.events - p.events / 20 < BlockerEvents(p)) {
    return "--events " + std::to_string(p.events) + " leaves fewer device events than the " +
           std::to_string(BlockerEvents(p)) + " blocker kernels (one per GPU per step)";
  }
  return "";
}

bool WriteTraceFile(const FileParams& p, const std::string& path, FileStats* stats,
                    std::string* error) {
  *stats = FileStats{};
  if (std::string bad = CheckParams(p); !bad.empty()) {
    *error = bad;
    return false;
  }
  Layout layout = MakeLayout(p);
  uint64_t total = 0;
  std::optional<Key> threshold = CapThreshold(p, layout, &total);
  stats->events_before_cap = total;
  stats->capped = threshold.has_value();
  for (int d = 1; d <= p.gpus; ++d) DeviceStatsFor(p, layout, d, threshold, stats);

  Sink sink;
  if (!sink.Open(path, p, error)) return false;
  std::string line;
  line.reserve(1024);
  sink.Append(
      "{\"displayTimeUnit\":\"ns\",\"metadata\":{\"highres-ticks\":true},\"traceEvents\":[");
  auto meta_process = [&](int pid, const std::string& name) {
    line = "{\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
           ",\"name\":\"process_name\",\"args\":{\"name\":\"" + name + "\"}},";
    line += "{\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
            ",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":" + std::to_string(pid) +
            "}},";
    sink.Append(line);
    stats->metadata_events += 2;
  };
  auto meta_threads = [&](int pid) {
    int sort = 0;
    for (const StreamSpec& s : layout.streams) {
      if (s.pid != pid) continue;
      ++sort;
      std::string tid = std::to_string(s.tid);
      line = "{\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + tid +
             ",\"name\":\"thread_name\",\"args\":{\"name\":\"" + s.thread_name + "\"}},";
      line += "{\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + tid +
              ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":" +
              std::to_string(pid == kHostPid ? sort : s.tid) + "}},";
      sink.Append(line);
      stats->metadata_events += 2;
    }
  };
  for (int d = 1; d <= p.gpus; ++d) {
    meta_process(d, "/device:GPU:" + std::to_string(d - 1));
    meta_threads(d);
  }
  meta_process(kHostPid, "/host:CPU");
  meta_threads(kHostPid);

  // X events: host first (as the converter emits planes), then devices, each
  // thread's events in time order.
  const auto& names = Names().all;
  bool nvidia = p.vendor == Vendor::kNvidia;
  uint64_t correlation = 1;
  for (const StreamSpec& s : layout.streams) {
    StreamGen gen(p, s, layout.base_ps);
    Event ev;
    std::string prefix = "{\"ph\":\"X\",\"pid\":" + std::to_string(s.pid) +
                         ",\"tid\":" + std::to_string(s.tid) + ",\"ts\":";
    while (gen.Next(&ev)) {
      if (!Kept(threshold, s, ev)) continue;
      const KernelName& k = *names[ev.name];
      char num[64];
      line = prefix;
      line.append(num, FormatMicrosTo(ev.ts_ps, num));
      line += ",\"dur\":";
      line.append(num, FormatMicrosTo(ev.dur_ps, num));
      line += ",\"name\":\"";
      line += k.name;
      line += "\",\"args\":{\"correlation_id\":\"";
      AppendInt(&line, static_cast<int64_t>(correlation++));
      line += '"';
      if (nvidia && s.role != Role::kHost) line += ",\"context_id\":\"1\"";
      if (s.role != Role::kHost || k.hlo_op[0] != '\0') {
        line += ",\"hlo_module\":\"jit_train_step\"";
      }
      if (k.hlo_op[0] != '\0') {
        line += ",\"hlo_op\":\"";
        line += k.hlo_op;
        line += '"';
      }
      line += "}},";
      sink.Append(line);
      ++stats->events;
      if (s.role == Role::kHost) ++stats->host_events;
    }
  }
  sink.Append("{}]}");
  if (!sink.Close(error)) return false;
  stats->uncompressed_bytes = sink.written();
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f != nullptr) {
    std::fseek(f, 0, SEEK_END);
    stats->bytes = static_cast<uint64_t>(std::ftell(f));
    std::fclose(f);
  }
  return true;
}

}  // namespace profwatch::tracegen
