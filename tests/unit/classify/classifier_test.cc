#include "classify/classifier.h"

#include <gtest/gtest.h>

#include <thread>

namespace profwatch::classify {
namespace {

std::shared_ptr<const Classifier> Make(std::string_view set_name) {
  auto set = BuiltinRuleSet(set_name);
  EXPECT_TRUE(set.has_value());
  auto c = Classifier::Create(std::move(*set));
  EXPECT_TRUE(c.has_value()) << c.error().ToString();
  return *c;
}

std::string FamilyOf(const Classifier& c, std::string_view name) {
  return c.FamilyNames()[c.Classify(name)];
}

TEST(DrillRuleSetTest, HasThirteenFamiliesInProfileDrillOrderThenOther) {
  auto c = Make("drill");
  const std::vector<std::string> expected = {
      "RaggedAllToAllKernelImpl", "primus_turbo::deep_ep",
      "input_scatter_fusion",     "loop_select_fusion",
      "loop_gather_fusion",       "loop_reduce_fusion",
      "loop_convert_fusion",      "loop_transpose_fusion",
      "input_reduce_select",      "input_broadcast_reduce_select",
      "RCCL ncclDevKernel",       "CK+primus GEMM (non-DeepEP)",
      "flash_attn (fmha)",        "Other kernels"};
  EXPECT_EQ(c->FamilyNames(), expected);
  EXPECT_EQ(c->OtherId(), 13);
  EXPECT_EQ(c->RuleSetName(), "drill");
}

TEST(DrillRuleSetTest, KindsMarkTheCommunicationAndMathFamilies) {
  auto c = Make("drill");
  for (FamilyId id = 0; id < c->FamilyNames().size(); ++id) {
    const std::string& n = c->FamilyNames()[id];
    const bool comm = n == "RaggedAllToAllKernelImpl" || n == "primus_turbo::deep_ep" ||
                      n == "RCCL ncclDevKernel";
    const bool math = n == "CK+primus GEMM (non-DeepEP)" || n == "flash_attn (fmha)";
    EXPECT_EQ(c->KindOf(id), comm   ? FamilyKind::kComm
                             : math ? FamilyKind::kMath
                                    : FamilyKind::kCompute)
        << n;
  }
}

// The model's dense math (GEMM, attention, convolution) is its own kind in
// both native sets: the diagnosis never calls it a blocker.
TEST(NativeRuleSetTest, GemmAttentionAndConvAreMath) {
  for (const char* set : {"nvidia", "amd"}) {
    auto c = Make(set);
    for (FamilyId id = 0; id < c->FamilyNames().size(); ++id) {
      const std::string& n = c->FamilyNames()[id];
      const bool math = n == "gemm" || n == "attention" || n == "conv";
      EXPECT_EQ(c->KindOf(id) == FamilyKind::kMath, math) << set << " " << n;
    }
  }
}

// Issue #48: the rules see a kernel's own name, without its top-level
// parameter list; template arguments stay (CK and CUTLASS attention kernels
// are known by them); a "(...)" after a space is part of the name.
TEST(KernelNameTest, WithoutParametersStripsOnlyABalancedTrailingList) {
  EXPECT_EQ(
      KernelNameWithoutParameters("void f<int, (anonymous namespace)::X>(int, fbgemm_gpu::D)"),
      "void f<int, (anonymous namespace)::X>");
  EXPECT_EQ(KernelNameWithoutParameters(
                "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::"
                "BFloat16*, unsigned long)"),
            "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>");
  EXPECT_EQ(KernelNameWithoutParameters("k(g(int), h(x(y)))"), "k");
  for (std::string_view whole :
       {"nvjet_tst_128x256_64x4_2x1_v_bz_coopA_TNN", "Memcpy HtoD (Pageable -> Device)",
        "Memset (Device)", "f(int))", "f(int", "(x)", "input_fusion.kd", "foo(int) const", ""}) {
    EXPECT_EQ(KernelNameWithoutParameters(whole), whole);
  }
}

TEST(NativeRuleSetTest, FamiliesComeFromTheKernelsOwnNameNotItsParameters) {
  const std::string fbgemm =
      "void split_embedding_codegen_forward_unweighted_kernel<float, float, long, 128, long>("
      "at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, long>, "
      "fbgemm_gpu::FixedDivisor, long)";
  for (const char* set : {"nvidia", "amd"}) {
    SCOPED_TRACE(set);
    auto c = Make(set);
    EXPECT_EQ(FamilyOf(*c, fbgemm), "other");
    // Template arguments still count: CK's attention, CUTLASS's GEMM.
    EXPECT_EQ(FamilyOf(*c, "void ck_tile::kentry<ck_tile::FmhaFwdKernel<X>>(int)"), "attention");
    EXPECT_EQ(FamilyOf(*c, "void cutlass::Kernel2<cutlass_80_tensorop_gemm>(Params)"), "gemm");
    EXPECT_EQ(FamilyOf(*c, "Memcpy HtoD (Pageable -> Device)"), "memory");
  }
  // The drill set matches whole names, as profile_drill.py does.
  auto drill = Make("drill");
  EXPECT_EQ(FamilyOf(*drill, "void k<int>(ck_tile::Args)"), "CK+primus GEMM (non-DeepEP)");
}

// Names taken from ../shared/fixtures/drill/*.trace.json.gz; families as in
// that folder's expected_outputs.txt (profile_drill.py's first-match-wins).
TEST(DrillRuleSetTest, ClassifiesFixtureNamesLikeProfileDrill) {
  auto c = Make("drill");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"stream_executor::gpu::RaggedAllToAllKernelImpl<8>", "RaggedAllToAllKernelImpl"},
      {"primus_turbo::deep_ep::intranode::dispatch<8>", "primus_turbo::deep_ep"},
      {"input_scatter_fusion_2.kd", "input_scatter_fusion"},
      {"input_scatter_fusion_7.kd", "input_scatter_fusion"},
      {"loop_select_fusion_1.kd", "loop_select_fusion"},
      {"loop_gather_fusion_3.kd", "loop_gather_fusion"},
      {"loop_reduce_fusion_9.kd", "loop_reduce_fusion"},
      {"loop_convert_fusion.kd", "loop_convert_fusion"},
      {"loop_transpose_fusion_4.kd", "loop_transpose_fusion"},
      {"input_reduce_select_fusion.kd", "input_reduce_select"},
      {"input_broadcast_reduce_select_fusion_1.kd", "input_broadcast_reduce_select"},
      {"ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)", "RCCL ncclDevKernel"},
      {"Cijk_Ailk_Bljk_BBS_BH_MT256x256x64_MI16x16x1_SN", "CK+primus GEMM (non-DeepEP)"},
      {"void ck_tile::kentry<256, 1, ck_tile::GemmKernel<...>>()", "CK+primus GEMM (non-DeepEP)"},
      {"primus_turbo::grouped_gemm_kernel", "CK+primus GEMM (non-DeepEP)"},
      {"aiter::fmha_fwd_hd128_bf16", "flash_attn (fmha)"},
      {"__amd_rocclr_copyBuffer.kd", "Other kernels"},
      {"my_kernel [clone .kd]", "Other kernels"},
      {"rocprim::detail::radix_sort_kernel", "Other kernels"},
      {"int_dur.kd", "Other kernels"},
      {"waiter_helper", "Other kernels"},
  };
  for (const auto& [name, family] : cases) EXPECT_EQ(FamilyOf(*c, name), family) << name;
}

TEST(DrillRuleSetTest, DeepEpWinsOverCkAndCijkMarkers) {
  auto c = Make("drill");
  EXPECT_EQ(FamilyOf(*c, "primus_turbo::deep_ep::ck_tile::x"), "primus_turbo::deep_ep");
  EXPECT_EQ(FamilyOf(*c, "Cijk_foo primus_turbo::deep_ep"), "primus_turbo::deep_ep");
}

TEST(DrillRuleSetTest, EarlierTagWinsForNamesWithTwoTags) {
  auto c = Make("drill");
  EXPECT_EQ(FamilyOf(*c, "loop_select_fusion_loop_convert_fusion.kd"), "loop_select_fusion");
  // loop_gather (5th) precedes loop_reduce (6th) whatever the text order.
  EXPECT_EQ(FamilyOf(*c, "loop_reduce_fusion_loop_gather_fusion.kd"), "loop_gather_fusion");
  // RaggedAllToAll (1st) beats a fusion tag.
  EXPECT_EQ(FamilyOf(*c, "input_scatter_fusion_RaggedAllToAllKernelImpl"),
            "RaggedAllToAllKernelImpl");
}

TEST(DrillRuleSetTest, FlashAttnNeedsBothAiterAndFmha) {
  auto c = Make("drill");
  EXPECT_EQ(FamilyOf(*c, "aiter::fmha_fwd_hd128_bf16"), "flash_attn (fmha)");
  EXPECT_EQ(FamilyOf(*c, "waiter_fmha"), "flash_attn (fmha)");  // substring, like drill
  EXPECT_EQ(FamilyOf(*c, "aiter::paged_attention"), "Other kernels");
  EXPECT_EQ(FamilyOf(*c, "fmha_fwd_only"), "Other kernels");
  // Cijk_ makes it a GEMM first (rule 12 precedes 13).
  EXPECT_EQ(FamilyOf(*c, "Cijk_aiter_fmha_mix"), "CK+primus GEMM (non-DeepEP)");
}

TEST(DrillRuleSetTest, NcclRuleIsAPrefixTest) {
  auto c = Make("drill");
  EXPECT_EQ(FamilyOf(*c, "ncclDevKernel_AllReduce"), "RCCL ncclDevKernel");
  EXPECT_EQ(FamilyOf(*c, "void ncclDevKernel_AllReduce"), "Other kernels");
}

TEST(DrillIsKernelNameTest, MatchesProfileDrillMarkers) {
  for (std::string_view n :
       {"input_scatter_fusion_2.kd", "my_kernel [clone .kd]", "ncclDevKernel_Generic_1(x)",
        "primus_turbo::grouped_gemm_kernel", "void ck_tile::kentry<>", "waiter_helper",
        "aiter::fmha", "rocprim::detail::radix_sort_kernel", "Cijk_Ailk", "xCijk_",
        "stream_executor::gpu::RaggedAllToAllKernelImpl<8>", ".kd"}) {
    EXPECT_TRUE(DrillIsKernelName(n)) << n;
  }
  for (std::string_view n :
       {"", "loop_select_fusion_1", "ThunkExecutor::Execute", "input_transpose_fusion", "x.kd ",
        "x.KD", "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm>", "nvjet_tst_64x64",
        "sm90_xmma_gemm_bf16", "void ncclDevKernel", "cijk_lower",
        "Memcpy DtoD (Device -> Device)"}) {
    EXPECT_FALSE(DrillIsKernelName(n)) << n;
  }
}

// Names from ../shared/fixtures/real/kineto/*.json.gz (NVIDIA samples).
TEST(NvidiaRuleSetTest, ClassifiesRealKinetoKernelNames) {
  auto c = Make("nvidia");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>("
       "cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4::Params)",
       "gemm"},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_"
       "segment_k_off_kernel__5x_cublas",
       "gemm"},
      {"nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", "gemm"},
      {"ampere_sgemm_32x32_sliced1x4_tn", "gemm"},
      {"volta_sgemm_64x64_nt", "gemm"},
      {"bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16", "gemm"},
      {"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw", "conv"},
      {"void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>()",
       "conv"},
      {"void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>()", "conv"},
      {"void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, "
       "128, 4, false, false, cutlass::bfloat16_t>>()",
       "attention"},
      {"fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext",
       "attention"},
      {"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "nccl"},
      {"void ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "nccl"},
      {"void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>()", "comm_other"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>()",
       "elementwise"},
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>()", "reduce"},
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16>()",
       "norm"},
      {"void cudnn::bn_fw_tr_1C11_singleread<float, 512, true, 1, 2, 0>()", "norm"},
      {"triton_poi_fused_add_bitwise_and_bitwise_not_bitwise_or_ge_lt_mul_sub_0", "triton"},
      {"loop_add_fusion_3", "xla_fusion_loop"},
      {"input_reduce_fusion", "xla_fusion_input"},
      {"wrapped_concatenate", "xla_fusion_other"},
      {"concatenate_fusion_1", "xla_fusion_other"},
      {"Memcpy DtoD (Device -> Device)", "memory"},
      {"void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<"
       "cutlass::bfloat16_t, cutlass::bfloat16_t, 4, true> >()",
       "other"},
      {"_copy_page_indices_kernel", "other"},
  };
  for (const auto& [name, family] : cases) EXPECT_EQ(FamilyOf(*c, name), family) << name;
  EXPECT_EQ(c->KindOf(c->Classify("ncclKernel_x")), FamilyKind::kComm);
  EXPECT_EQ(c->KindOf(c->Classify("Memset (Device)")), FamilyKind::kMemory);
  EXPECT_EQ(c->KindOf(c->Classify("nvjet_x")), FamilyKind::kMath);
  EXPECT_EQ(c->KindOf(c->Classify("triton_poi_fused_gelu_3")), FamilyKind::kCompute);
}

// Memory operations are the runtimes' copy names as whole names; a kernel
// whose name contains memset, memcpy or copy stays a kernel in every set.
TEST(RuntimeMemopTest, WholeRuntimeNamesOnlyInEveryNativeSet) {
  const std::vector<std::string> memops = {"Memcpy HtoD (Pageable -> Device)",
                                           "Memcpy DtoD (Device -> Device)",
                                           "Memcpy DtoH (Device -> Pinned)",
                                           "Memcpy HtoD (Host -> Device)",
                                           "Memset (Device)",
                                           "Memset (Unknown)",
                                           "MemcpyD2H",
                                           "MemcpyH2D",
                                           "MemcpyD2D",
                                           "MemcpyP2P",
                                           "Memcpy",
                                           "Memset",
                                           "Memset 3",
                                           "CopyDeviceToDevice",
                                           "CopyHostToDevice",
                                           "CopyDeviceToHost2D",
                                           "FillBuffer",
                                           "hipMemcpyDtoDAsync",
                                           "cudaMemsetAsync"};
  const std::vector<std::string> kernels = {
      "_combined_routing_memset",
      "triton_memcpy_kernel",
      "copy_kernel",
      "void memcpy_kernel<x>",
      "vectorized_memcpy_kernel",
      "MemsetKernel",
      "Memcpy_fused_kernel",
      "CopyTokensToExperts_kernel",
      "CopyDeviceToDeviceKernel",
      "FillBufferAligned",
      "__amd_rocclr_copyBuffer.kd",
      "__amd_rocclr_fillBufferAligned.kd",
      "void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda>",
      "triton_poi_fused__to_copy_0",
      "Memset (Device) extra",
      " Memset (Device)",
      std::string(20000, 'M')};
  for (const char* set : {"nvidia", "amd"}) {
    auto c = Make(set);
    for (const auto& n : memops) {
      EXPECT_TRUE(IsRuntimeMemopName(n)) << n;
      EXPECT_EQ(FamilyOf(*c, n), "memory") << set << " " << n;
    }
    for (const auto& n : kernels) {
      EXPECT_FALSE(IsRuntimeMemopName(n)) << n;
      EXPECT_NE(c->KindOf(c->Classify(n)), FamilyKind::kMemory) << set << " " << n;
    }
  }
  EXPECT_EQ(FamilyOf(*Make("nvidia"), "_combined_routing_memset"), "other");
  EXPECT_EQ(FamilyOf(*Make("nvidia"), "triton_memcpy_kernel"), "triton");
}

TEST(NvidiaRuleSetTest, FamilyNamesAreLabelFriendly) {
  auto c = Make("nvidia");
  const std::vector<std::string> expected = {"nccl",
                                             "comm_other",
                                             "memory",
                                             "attention",
                                             "conv",
                                             "gemm",
                                             "xla_fusion_loop",
                                             "xla_fusion_input",
                                             "xla_fusion_other",
                                             "triton",
                                             "norm",
                                             "elementwise",
                                             "reduce",
                                             "other"};
  EXPECT_EQ(c->FamilyNames(), expected);
  for (const auto& n : c->FamilyNames()) {
    ASSERT_FALSE(n.empty());
    EXPECT_TRUE(n[0] >= 'a' && n[0] <= 'z') << n;
    for (char ch : n)
      EXPECT_TRUE((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_') << n;
  }
}

TEST(BuiltinRuleSetTest, UnknownNameIsConfigError) {
  auto s = BuiltinRuleSet("intel");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code, ErrorCode::kConfig);
  EXPECT_EQ(s.error().context, "unknown rule set 'intel' (built-in sets: drill, nvidia, amd)");
  EXPECT_EQ(BuiltinRuleSetNames(), (std::vector<std::string>{"drill", "nvidia", "amd"}));
}

TEST(AutoRuleSetTest, PicksNvidiaForCudaKernelNames) {
  EXPECT_EQ(AutoRuleSetName({"void cutlass::Kernel2<x>", "nvjet_tst_64", "void at::native::x"}),
            "nvidia");
  EXPECT_EQ(AutoRuleSetName({"sm90_xmma_gemm_bf16"}), "nvidia");
}

TEST(AutoRuleSetTest, PicksAmdForRocmKernelNames) {
  EXPECT_EQ(AutoRuleSetName({"input_scatter_fusion_2.kd", "Cijk_Ailk", "ncclDevKernel_Generic"}),
            "amd");
  // ROCm PyTorch: HIP kernels demangle like CUDA ones, Cijk_ decides.
  EXPECT_EQ(AutoRuleSetName({"void at::native::vectorized_elementwise_kernel<4>",
                             "void at::native::reduce_kernel<512>", "Cijk_Alik_Bljk_SB"}),
            "amd");
}

TEST(AutoRuleSetTest, MajorityOfMarkedNamesWinsTiesGoToAmdNoMarkerStaysDrill) {
  EXPECT_EQ(AutoRuleSetName({"Cijk_a", "nvjet_b", "cutlass_c"}), "nvidia");
  EXPECT_EQ(AutoRuleSetName({"Cijk_a", "nvjet_b"}), "amd");
  EXPECT_EQ(AutoRuleSetName({}), "drill");
  EXPECT_EQ(AutoRuleSetName({"loop_add_fusion", "ncclDevKernel_x"}), "drill");
}

TEST(AutoRuleSetTest, VoidPrefixDecidesOnlyWithoutStrongMarkers) {
  EXPECT_EQ(AutoRuleSetName({"void at::native::vectorized_elementwise_kernel<4>"}), "nvidia");
  EXPECT_EQ(AutoRuleSetName({"void at::native::x", "x.kd"}), "amd");
}

// Attention is attention whatever library wrote it; the GEMM markers many of
// these names also carry (ck_tile::, cutlass::) must not win.
TEST(NativeRuleSetTest, AttentionKernelsOfEachVendorAreAttention) {
  const std::vector<std::string> amd = {
      "_ZN7ck_tile6kentryILi1ENS_13FmhaFwdKernelINS_27BlockFmhaPipelineQRKSVSAsyncE",
      "ck_tile::FmhaBwdDQDKDVKernel<ck_tile::BlockFmhaBwdPipeline<bf16>>",
      "aiter::fmha_fwd_hd128_bf16_causal",
      "_ZN5aiter17mha_bwd_odo_kernelILi128EEEvv",
      "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4>, true>",
      "void at::native::(anonymous namespace)::cunn_SoftMaxForward<sdpa>"};
  const std::vector<std::string> nvidia = {
      "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
      "cutlass::bfloat16_t>>",
      "void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128>>",
      "fmha_cutlassF_bf16_aligned_64x128_rf_sm80",
      "cudnn_generated_fort_native_sdpa_sm90_knob_7_64x128x128_4x1x1_kernel0_0",
      "void cutlass::device_kernel<cutlass::fmha::kernel::Sm100FmhaFwdKernelTmaWarpspecialized>",
      "xformers::fmha_cutlassB_f16_aligned_128x64_k128_sm80"};
  auto amd_set = Make("amd");
  auto nvidia_set = Make("nvidia");
  for (const std::string& n : amd) EXPECT_EQ(FamilyOf(*amd_set, n), "attention") << n;
  for (const std::string& n : nvidia) EXPECT_EQ(FamilyOf(*nvidia_set, n), "attention") << n;
  // profile_drill's classes stay: its attention family needs "aiter" and
  // "fmha"; a CK FmhaFwd kernel is one of its GEMMs.
  auto drill = Make("drill");
  EXPECT_EQ(FamilyOf(*drill, amd[1]), "CK+primus GEMM (non-DeepEP)");
  EXPECT_EQ(FamilyOf(*drill, amd[2]), "flash_attn (fmha)");
}

TEST(NativeRuleSetTest, AmdSetClassesRocmKernelsByWhatTheyDo) {
  auto c = Make("amd");
  EXPECT_EQ(c->RuleSetName(), "amd");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ncclDevKernel_Generic_1(ncclDevComm*, unsigned long, ncclWork*)", "nccl"},
      {"stream_executor::gpu::RaggedAllToAllKernelImpl<8>", "comm_other"},
      {"primus_turbo::deep_ep::intranode::dispatch<8>", "comm_other"},
      {"__amd_rocclr_copyBuffer.kd", "other"},
      {"hipMemcpyDtoDAsync", "memory"},
      {"Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI32x32x8x1_SN_1LDSB0", "gemm"},
      {"_ZN7ck_tile6kentryILi1ENS_10GemmKernelINS_19GemmPipelineAgBgCrE", "gemm"},
      {"primus_turbo::grouped_gemm_kernel<bf16>", "gemm"},
      {"loop_select_fusion_1.kd", "xla_fusion_loop"},
      {"input_scatter_fusion_2.kd", "xla_fusion_input"},
      {"void at::native::vectorized_elementwise_kernel<4>", "elementwise"},
      {"something_else.kd", "other"}};
  for (const auto& [name, family] : cases) EXPECT_EQ(FamilyOf(*c, name), family) << name;
  EXPECT_EQ(c->KindOf(c->Classify("hipMemcpyDtoDAsync")), FamilyKind::kMemory);
  EXPECT_EQ(c->KindOf(c->Classify("primus_turbo::deep_ep::intranode::dispatch<8>")),
            FamilyKind::kComm);
}

RuleSet OneRule(std::string family, FamilyKind kind, MatchOp op,
                std::vector<std::string> patterns) {
  RuleSet s;
  s.name = "t";
  s.other_family = "rest";
  Rule r;
  r.family = std::move(family);
  r.kind = kind;
  r.all_of.push_back(Condition{op, std::move(patterns)});
  r.origin = "t.yaml:3";
  s.rules.push_back(std::move(r));
  return s;
}

TEST(ClassifierTest, RejectsBadRegexNamingTheRule) {
  auto c = Classifier::Create(OneRule("g", FamilyKind::kCompute, MatchOp::kRegex, {"gemm("}));
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, ErrorCode::kConfig);
  EXPECT_TRUE(c.error().context.starts_with("t.yaml:3: family 'g': bad regex 'gemm(': "))
      << c.error().context;
}

TEST(ClassifierTest, RegexIsSearchedAnywhereInTheName) {
  auto c =
      Classifier::Create(OneRule("g", FamilyKind::kCompute, MatchOp::kRegex, {"gemm_[0-9]+$"}));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(FamilyOf(**c, "triton_gemm_12"), "g");
  EXPECT_EQ(FamilyOf(**c, "triton_gemm_x"), "rest");
}

TEST(ClassifierTest, SuffixAndNotContainsWithSeveralPatterns) {
  RuleSet s = OneRule("k", FamilyKind::kCompute, MatchOp::kSuffix, {".kd", ".co"});
  s.rules[0].all_of.push_back(Condition{MatchOp::kNotContains, {"copy", "fill"}});
  auto c = Classifier::Create(std::move(s));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(FamilyOf(**c, "a.kd"), "k");
  EXPECT_EQ(FamilyOf(**c, "a.co"), "k");
  EXPECT_EQ(FamilyOf(**c, "copy.kd"), "rest");
  EXPECT_EQ(FamilyOf(**c, "fill.co"), "rest");
  EXPECT_EQ(FamilyOf(**c, "a.kd.x"), "rest");
}

TEST(ClassifierTest, ConflictingKindsForOneFamilyAreRejected) {
  RuleSet s = OneRule("x", FamilyKind::kCompute, MatchOp::kContains, {"a"});
  Rule r = s.rules[0];
  r.kind = FamilyKind::kComm;
  r.origin = "t.yaml:9";
  s.rules.push_back(r);
  auto c = Classifier::Create(std::move(s));
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().context, "t.yaml:9: family 'x' declared as comm but as compute at t.yaml:3");
}

TEST(ClassifierTest, RuleNamedLikeOtherSendsMatchesToOther) {
  RuleSet s = OneRule("rest", FamilyKind::kCompute, MatchOp::kContains, {"skip"});
  Rule r;
  r.family = "all";
  r.all_of.push_back(Condition{MatchOp::kContains, {"k"}});
  s.rules.push_back(r);
  auto c = Classifier::Create(std::move(s));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ((*c)->FamilyNames(), (std::vector<std::string>{"all", "rest"}));
  EXPECT_EQ((*c)->Classify("skip_k"), (*c)->OtherId());
  EXPECT_EQ(FamilyOf(**c, "k"), "all");
}

TEST(ClassifierTest, EmptyConditionOrFamilyIsRejected) {
  auto c = Classifier::Create(OneRule("x", FamilyKind::kCompute, MatchOp::kContains, {}));
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().context, "t.yaml:3: rule for family 'x' has an empty condition");
  auto d = Classifier::Create(OneRule("", FamilyKind::kCompute, MatchOp::kContains, {"a"}));
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().context, "t.yaml:3: rule has an empty family name");
}

TEST(ClassifierTest, ConcurrentClassifyGivesTheSameAnswers) {
  auto c = Make("nvidia");
  const std::vector<std::string> names = {"nvjet_a", "ncclKernel_b", "loop_x_fusion", "zzz",
                                          "Memcpy HtoD"};
  std::vector<FamilyId> expected;
  for (const auto& n : names) expected.push_back(c->Classify(n));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        const size_t k = static_cast<size_t>(i) % names.size();
        if (c->Classify(names[k]) != expected[k]) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(FamilyKindNameTest, NamesAllKinds) {
  EXPECT_EQ(FamilyKindName(FamilyKind::kCompute), "compute");
  EXPECT_EQ(FamilyKindName(FamilyKind::kComm), "comm");
  EXPECT_EQ(FamilyKindName(FamilyKind::kMemory), "memory");
  EXPECT_EQ(FamilyKindName(FamilyKind::kMath), "math");
}

}  // namespace
// A name of megabytes: the regexes of the memory family are tried at its
// start only and not on names past kMaxRegexName (libstdc++'s regex recurses
// per character: "cudaMemcpy" and 64 KiB of letters overflowed the stack);
// contains, prefix and suffix still see it whole.
TEST(NativeRuleSetTest, HugeNamesAreClassifiedWithoutRegexRecursionOrScanningEveryPosition) {
  auto c = *Classifier::Create(*BuiltinRuleSet("nvidia"));
  const std::string memcpy_like = "cudaMemcpy" + std::string(size_t{1} << 20, 'a');
  EXPECT_FALSE(IsRuntimeMemopName(memcpy_like));
  EXPECT_EQ(c->FamilyNames()[c->Classify(memcpy_like)], "other");
  const std::string nccl = std::string(size_t{1} << 20, 'x') + "ncclDevKernel_AllReduce";
  EXPECT_EQ(c->FamilyNames()[c->Classify(nccl)], "nccl");
  EXPECT_TRUE(IsRuntimeMemopName("cudaMemcpyAsync"));
  EXPECT_EQ(c->FamilyNames()[c->Classify("Memset (Device)")], "memory");
  EXPECT_TRUE(RegexAnchoredAtStart("^Memcpy(H2D|D2H)?$"));
  EXPECT_TRUE(RegexAnchoredAtStart(R"(^a\|b[|])"));
  EXPECT_FALSE(RegexAnchoredAtStart("^a|b"));
  EXPECT_FALSE(RegexAnchoredAtStart("a^"));
}

// A name over 32 KiB is judged on its first and last 16 KiB joined: a
// marker within either end counts, one only in the middle does not (the
// work per name is bounded whatever its length).
TEST(NativeRuleSetTest, NamesOverThirtyTwoKiBAreJudgedOnTheirEnds) {
  auto c = *Classifier::Create(*BuiltinRuleSet("nvidia"));
  const std::string marker = "ncclDevKernel_AllReduce";
  const std::string fill(size_t{1} << 20, 'x');
  auto family = [&](const std::string& name) { return c->FamilyNames()[c->Classify(name)]; };
  EXPECT_EQ(family(marker + fill), "nccl");
  EXPECT_EQ(family(fill.substr(0, 10000) + marker + fill), "nccl") << "within the first 16 KiB";
  EXPECT_EQ(family(fill + marker + fill.substr(0, 10000)), "nccl") << "within the last 16 KiB";
  EXPECT_EQ(family(fill.substr(0, 20000) + marker + fill), "other") << "only in the middle";
  // Up to 32 KiB the name is seen whole.
  const std::string whole = std::string(20000, 'x') + marker + std::string(8000, 'x');
  ASSERT_LE(whole.size(), size_t{32} << 10);
  EXPECT_EQ(family(whole), "nccl");
}

}  // namespace profwatch::classify
