#include "figures/kernel_label.h"

#include <gtest/gtest.h>

#include <string>

namespace profwatch::figures {
namespace {

TEST(KernelLabelTest, DropsReturnTypeTemplateArgumentsAndParameterList) {
  EXPECT_EQ(ShortKernelName("void at::native::vectorized_elementwise_kernel<4, "
                            "at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, "
                            "at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"),
            "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(ShortKernelName("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned "
                            "long, ncclWork*)"),
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
  EXPECT_EQ(ShortKernelName("ck_tile::kentry<256, 1, ck_tile::FmhaFwdKernel<ck_tile::"
                            "BlockFmhaPipelineQRKSVSAsync<ck_tile::half_t>>>"),
            "ck_tile::kentry");
}

TEST(KernelLabelTest, KeepsAnonymousNamespaceAndOperatorNames) {
  EXPECT_EQ(ShortKernelName("void (anonymous namespace)::softmax_warp_forward<float, float, "
                            "float, 8, false>(float*, float const*, int, int, int)"),
            "(anonymous namespace)::softmax_warp_forward");
  EXPECT_EQ(ShortKernelName("cub::Functor<int>::operator()<float>(float) const"),
            "cub::Functor::operator()");
  EXPECT_EQ(ShortKernelName("ns::Foo::operator<<(int) &&"), "ns::Foo::operator<<");
}

TEST(KernelLabelTest, PlainNamesStayAsTheyAre) {
  EXPECT_EQ(ShortKernelName("Cijk_Alik_Bljk_BBS_BH_MT128x128x32"),
            "Cijk_Alik_Bljk_BBS_BH_MT128x128x32");
  EXPECT_EQ(ShortKernelName("loop_convert_fusion_3"), "loop_convert_fusion_3");
  EXPECT_EQ(ShortKernelName(""), "");
}

TEST(KernelLabelTest, UnbalancedBracketsKeepTheName) {
  EXPECT_EQ(ShortKernelName("broken<name"), "broken<name");
  EXPECT_EQ(ShortKernelName("broken>name"), "broken>name");
  EXPECT_EQ(ShortKernelName("call(open"), "call(open");
  EXPECT_EQ(ShortKernelName("void <int>()"), "void <int>()");
}

TEST(KernelLabelTest, CutsAtMaxBytesOnACharacterBoundary) {
  const std::string long_name(300, 'k');
  EXPECT_EQ(ShortKernelName(long_name), std::string(kMaxKernelLabelBytes, 'k'));
  // 127 ASCII bytes then a two-byte character: cutting at 128 would split it.
  const std::string utf8 = std::string(127, 'a') + "\xC3\xA9" + "tail";
  EXPECT_EQ(ShortKernelName(utf8), std::string(127, 'a'));
  // A long template whose short form is short is not cut.
  EXPECT_EQ(ShortKernelName("void f<" + long_name + ">(int)"), "f");
}

}  // namespace
}  // namespace profwatch::figures
