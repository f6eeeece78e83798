// Kernel-family classification: an immutable, ordered rule table (built-in
// sets plus user rules from a file); first matching rule wins. A Classifier
// is const after construction and safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "classify/limits.h"
#include "core/result.h"

namespace profwatch::classify {

using FamilyId = uint16_t;

// What a family is, for measurements beyond the sum: exposed communication is
// comm time not covered by compute (compute or math) on the same GPU. Math
// families (GEMM, attention, convolution) are the model's dense arithmetic:
// compute that the diagnosis never calls a main-stream blocker, however
// long it runs alone (figures/diagnosis.h).
enum class FamilyKind : uint8_t { kCompute, kComm, kMemory, kMath };
std::string_view FamilyKindName(FamilyKind k);  // "compute", "comm", "memory", "math"

enum class MatchOp : uint8_t { kContains, kPrefix, kSuffix, kRegex, kNotContains };

// A condition holds when any of `patterns` matches under `op` (for
// kNotContains: when none of them is contained).
struct Condition {
  MatchOp op = MatchOp::kContains;
  std::vector<std::string> patterns;
};

// A rule matches a kernel name when all of its conditions hold.
struct Rule {
  std::string family;
  FamilyKind kind = FamilyKind::kCompute;
  std::vector<Condition> all_of;
  std::string origin;  // "builtin:drill" or "rules.yaml:12" for error messages
};

struct RuleSet {
  std::string name;                            // "drill", "nvidia", ...
  std::vector<Rule> rules;                     // in priority order
  std::string other_family = "Other kernels";  // unmatched names
  // The rules see the kernel's own name: without its top-level parameter
  // list (KernelNameWithoutParameters), so a type named among a kernel's
  // parameters (`split_embedding_kernel<...>(..., fbgemm_gpu::FixedDivisor)`)
  // never decides its family. True: the whole name, as profile_drill.py
  // matches it (the drill set, and a rules file based on it).
  bool match_whole_names = false;
};

// A kernel name without its top-level parameter list: a balanced "(...)" at
// the very end that directly follows the name ("f<T>(int, X)" -> "f<T>";
// "void (anonymous namespace)::k<..>(..)" -> "void (anonymous
// namespace)::k<..>"). Template arguments are kept (CK and CUTLASS attention
// kernels are known by them); a name that does not end in ")", whose list
// is unbalanced or follows a space ("Memcpy HtoD (Pageable -> Device)")
// stays whole.
std::string_view KernelNameWithoutParameters(std::string_view name);

// Built-in sets. `drill` reproduces profile_drill.py's 13 families in order;
// the native sets `nvidia` (cuBLAS/cutlass/nvjet GEMMs) and `amd`
// (hipBLASLt/CK/Primus GEMMs; ROCclr's blit kernels stay kernels) class kernels by what they do,
// attention from any library included. Unknown name: kConfig.
// Native families (both sets), in rule order (Prometheus label values): nccl, comm_other
// (comm); memory (memory); attention, conv, gemm (math); xla_fusion_loop,
// xla_fusion_input, xla_fusion_other, triton, norm, elementwise, reduce
// (compute); Other is "other". In the drill set the GEMM and flash-attention
// families are math. Patterns: builtin_rules.cc.
Result<RuleSet> BuiltinRuleSet(std::string_view name);
std::vector<std::string> BuiltinRuleSetNames();

// Picks "amd" or "nvidia" from the kernel names seen (vendor markers such as
// Cijk_/.kd/ck_tile vs cutlass/sm90/nvjet/cublas). Used by `--rules auto`.
// The set with more marked names wins, a tie goes to "amd"; no marker gives
// "drill", except that "void "-prefixed names alone give "nvidia".
std::string_view AutoRuleSetName(const std::vector<std::string_view>& sample_names);

// Loads user rules (YAML or JSON, see README "Family rules file"). The file's
// rules are placed before the base set's (so they override), and a rule whose
// family is named like a built-in one with `replace: true` drops the built-in.
// Errors are kConfig with "file:line: message". Schema: rules_file.cc (keys
// base, other, rules[family, kind, replace, match{contains, prefix, suffix,
// regex, not_contains}]); examples in tests/fixtures/classify/. The result is
// named "<base>+custom" ("custom" with base none). Family ids follow the first
// appearance of each family in the combined table (file rules first).
Result<RuleSet> LoadRulesFile(const std::string& path, RuleSet base);
Result<RuleSet> ParseRulesText(std::string_view text, std::string_view origin, RuleSet base);

class Classifier {
 public:
  // Validates and compiles `set` (regexes compiled once). kConfig on a bad regex.
  static Result<std::shared_ptr<const Classifier>> Create(RuleSet set);

  // Family of a kernel name (its own name, RuleSet::match_whole_names);
  // `Other` (the last id) when no rule matches. A name of more than 32 KiB
  // is judged on its first and last 16 KiB joined (the work per name is
  // bounded; real names are a few KiB at most).
  FamilyId Classify(std::string_view kernel_name) const;

  // Families in table order, Other last. Ids index this vector.
  const std::vector<std::string>& FamilyNames() const { return family_names_; }
  FamilyKind KindOf(FamilyId id) const { return family_kinds_[id]; }
  FamilyId OtherId() const { return static_cast<FamilyId>(family_names_.size() - 1); }
  const std::string& RuleSetName() const { return set_name_; }

  ~Classifier();
  Classifier(const Classifier&) = delete;
  Classifier& operator=(const Classifier&) = delete;

 private:
  Classifier();
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
  std::vector<std::string> family_names_;
  std::vector<FamilyKind> family_kinds_;
  std::string set_name_;
  bool whole_names_ = false;  // RuleSet::match_whole_names
};

// Memory operations named by the runtimes, recognised as whole names only:
// CUPTI through Kineto ("Memcpy HtoD (Pageable -> Device)", "Memset (Device)"),
// XLA's GPU tracer and the nsys reader ("MemcpyD2H", "Memset", "Memset 3"),
// ROCm ("CopyDeviceToDevice", "CopyHostToDevice2D", "FillBuffer") and the
// runtime API names (hipMemcpyDtoDAsync, cudaMemsetAsync). A kernel whose name
// merely contains memset, memcpy or copy (a Triton `_combined_routing_memset`,
// `triton_memcpy_kernel`, `copy_kernel`) is a kernel. The patterns are
// anchored ECMAScript regexes; the native sets' `memory` family is exactly
// them, and IsRuntimeMemopName matches the same ones.
const std::vector<std::string>& RuntimeMemopPatterns();
bool IsRuntimeMemopName(std::string_view name);

// Whether an ECMAScript `pattern` can only match at the start of the text
// (it begins with '^' and has no top-level alternative), so a search need
// only try there: on a name of megabytes, trying every position costs
// seconds per pattern.
bool RegexAnchoredAtStart(std::string_view pattern);

// profile_drill.py's kernel test (names only, no pid/thread filter): ends with
// ".kd", contains ".kd]", starts with "ncclDevKernel", or contains
// "primus_turbo::", "ck_tile::", "aiter", "rocprim::", "Cijk_",
// "stream_executor::". Case-sensitive.
bool DrillIsKernelName(std::string_view name);

}  // namespace profwatch::classify
