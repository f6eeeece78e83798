#include "aggregate/bytes.h"

#include "aggregate/collectives.h"

namespace profwatch::aggregate {

std::optional<int64_t> ElementBytes(std::string_view type) {
  if (auto b = TorchTypeBytes(type)) return b;
  return DtypeBytes(type);
}

std::optional<OpBytes> TorchOpBytes(std::string_view, const parse::OpShapes&) {
  return std::nullopt;  // the formulas follow
}

std::optional<int64_t> HloLaunchBytes(const parse::HloLaunch& l) {
  if (l.kind == parse::HloLaunch::Kind::kOpaque) return std::nullopt;
  return l.bytes;
}

std::optional<HbmPeak> PeakHbmBandwidth(std::string_view device) {
  // Vendor datasheets, peak HBM bandwidth per GPU. A name matches when it
  // holds `match` and `also`; more specific names first. 0: a device the
  // name does not tell apart (GH200 ships with 4 or 4.9 TB/s): unknown.
  static constexpr std::string_view kA100 =
      "NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4)";
  static constexpr std::string_view kH100 =
      "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100)";
  static constexpr std::string_view kH200 =
      "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200)";
  static constexpr std::string_view kB200 =
      "NVIDIA HGX B200 specifications (nvidia.com/en-us/data-center/hgx)";
  static constexpr std::string_view kV100 =
      "NVIDIA V100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/v100)";
  static constexpr std::string_view kMi300 =
      "AMD Instinct MI300X / MI325X / MI355X data sheets "
      "(amd.com/en/products/accelerators/instinct)";
  struct Peak {
    std::string_view match, also;
    double bytes_per_second;
    std::string_view source;
  };
  static constexpr Peak kPeaks[] = {
      {"GH200", "", 0, ""},
      {"H100 PCIe", "", 2.0e12, kH100},
      {"H100 NVL", "", 3.9e12, kH100},
      {"H100", "", 3.35e12, kH100},  // SXM5 80GB ("NVIDIA H100 80GB HBM3")
      {"H200", "", 4.8e12, kH200},   // SXM and NVL alike
      {"B200", "", 8.0e12, kB200},
      {"A100", "80GB PCIe", 1.935e12, kA100},
      {"A100", "PCIE-80GB", 1.935e12, kA100},
      {"A100", "80GB", 2.039e12, kA100},  // SXM4 80GB
      {"A100", "", 1.555e12, kA100},      // 40GB, SXM4 and PCIe
      {"V100S", "", 1.134e12, kV100},
      {"V100", "", 0.9e12, kV100},
      {"MI300X", "", 5.3e12, kMi300},
      {"MI325X", "", 6.0e12, kMi300},
      {"MI355X", "", 8.0e12, kMi300},
  };
  for (const Peak& p : kPeaks) {
    if (device.find(p.match) == std::string_view::npos) continue;
    if (!p.also.empty() && device.find(p.also) == std::string_view::npos) continue;
    if (p.bytes_per_second <= 0) return std::nullopt;
    return HbmPeak{p.bytes_per_second, p.source};
  }
  return std::nullopt;
}

}  // namespace profwatch::aggregate
