// Classifier: compiles a RuleSet into a flat table evaluated first-match-wins.
// Classification runs once per distinct kernel name (the aggregator interns
// names), so a linear scan over rules is cheap; regexes are compiled once here.
#include "classify/classifier.h"

// GCC 12 reports a false -Wmaybe-uninitialized inside <regex>'s std::function
// when optimising with sanitizers (the ASan+UBSan CI build); silence it for
// this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <algorithm>
#include <functional>
#include <memory>
#include <regex>
#include <unordered_map>

namespace profwatch::classify {

std::string_view FamilyKindName(FamilyKind k) {
  switch (k) {
    case FamilyKind::kCompute:
      return "compute";
    case FamilyKind::kComm:
      return "comm";
    case FamilyKind::kMemory:
      return "memory";
    case FamilyKind::kMath:
      return "math";
  }
  return "compute";
}

bool RegexAnchoredAtStart(std::string_view pattern) {
  if (!pattern.starts_with('^')) return false;
  // A top-level alternative ("^a|b") may match anywhere.
  int depth = 0;
  bool in_class = false;
  for (size_t i = 1; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      ++i;  // an escaped character is a literal
    } else if (in_class) {
      in_class = c != ']';
    } else if (c == '[') {
      in_class = true;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')') {
      --depth;
    } else if (c == '|' && depth == 0) {
      return false;
    }
  }
  return true;
}

// The compiled form of the rules (Classifier::Compiled holds them, so they
// are not in the anonymous namespace).
struct CompiledCondition {
  MatchOp op = MatchOp::kContains;
  std::vector<std::string> patterns;
  std::vector<std::regex> regexes;  // kRegex only, parallel to `patterns`
  // Parallel to `regexes`: the pattern can only match at the name's start,
  // so it is tried there alone (std::regex_search would try every position
  // of a name of megabytes).
  std::vector<uint8_t> anchored;
  // kContains and kNotContains: each pattern's Boyer-Moore-Horspool table,
  // for names of more than kShortName bytes. string_view::find compares at
  // every occurrence of the pattern's first byte, which a hostile name of
  // megabytes holds everywhere; heap-held, so the table's view of its
  // pattern survives moves.
  struct Searcher {
    explicit Searcher(std::string p) : pattern(std::move(p)), bmh(pattern.begin(), pattern.end()) {}
    std::string pattern;
    std::boyer_moore_horspool_searcher<std::string::const_iterator> bmh;
  };
  std::vector<std::unique_ptr<Searcher>> searchers;
};

struct CompiledRule {
  FamilyId family = 0;
  std::vector<CompiledCondition> all_of;
};

namespace {

// Names up to this length are searched with string_view::find (a real name:
// tens to a few thousand bytes).
constexpr size_t kShortName = 4096;

// A name of more than twice this many bytes is classified on its first and
// last kClassifiedEnd bytes joined: every rule's work per name is bounded
// (a search per contains pattern and rule set grows with the name's length,
// which no reader bounds below megabytes), while what real names
// are told by stays in view: their longest in the fixtures (cuDNN) has
// 5,123 characters, and library prefixes and the suffixes rules test (.kd,
// template arguments) sit at the ends. The joined text is longer than
// kMaxRegexName, so regex conditions hold on no such name, as before.
constexpr size_t kClassifiedEnd = size_t{16} << 10;
static_assert(2 * kClassifiedEnd > kMaxRegexName);

bool Contains(const CompiledCondition& c, size_t i, std::string_view name) {
  if (name.size() <= kShortName) return name.find(c.patterns[i]) != std::string_view::npos;
  return std::search(name.begin(), name.end(), c.searchers[i]->bmh) != name.end();
}

bool Holds(const CompiledCondition& c, std::string_view name) {
  switch (c.op) {
    case MatchOp::kContains:
      for (size_t i = 0; i < c.patterns.size(); ++i) {
        if (Contains(c, i, name)) return true;
      }
      return false;
    case MatchOp::kPrefix:
      for (const auto& p : c.patterns) {
        if (name.starts_with(p)) return true;
      }
      return false;
    case MatchOp::kSuffix:
      for (const auto& p : c.patterns) {
        if (name.ends_with(p)) return true;
      }
      return false;
    case MatchOp::kNotContains:
      for (size_t i = 0; i < c.patterns.size(); ++i) {
        if (Contains(c, i, name)) return false;
      }
      return true;
    case MatchOp::kRegex:
      if (name.size() > kMaxRegexName) return false;
      for (size_t i = 0; i < c.regexes.size(); ++i) {
        const auto flags = c.anchored[i] ? std::regex_constants::match_continuous
                                         : std::regex_constants::match_default;
        if (std::regex_search(name.begin(), name.end(), c.regexes[i], flags)) return true;
      }
      return false;
  }
  return false;
}

}  // namespace

struct Classifier::Compiled {
  std::vector<CompiledRule> rules;
};

Classifier::Classifier() : compiled_(std::make_unique<Compiled>()) {}
Classifier::~Classifier() = default;

Result<std::shared_ptr<const Classifier>> Classifier::Create(RuleSet set) {
  std::shared_ptr<Classifier> c(new Classifier());
  c->set_name_ = set.name;
  c->whole_names_ = set.match_whole_names;
  std::unordered_map<std::string, FamilyId> ids;
  std::vector<std::string> first_origin;  // per family id
  // Other always takes the last id; a rule naming it maps its matches to Other.
  const FamilyId kOtherPending = UINT16_MAX;
  for (const Rule& rule : set.rules) {
    const std::string where = rule.origin.empty() ? set.name : rule.origin;
    if (rule.family.empty()) {
      return MakeError(ErrorCode::kConfig, where + ": rule has an empty family name");
    }
    if (rule.all_of.empty()) {
      return MakeError(ErrorCode::kConfig,
                       where + ": rule for family '" + rule.family + "' has no conditions");
    }
    FamilyId id = kOtherPending;
    if (rule.family != set.other_family) {
      auto it = ids.find(rule.family);
      if (it == ids.end()) {
        if (c->family_names_.size() >= static_cast<size_t>(UINT16_MAX - 1)) {
          return MakeError(ErrorCode::kConfig, where + ": too many families");
        }
        id = static_cast<FamilyId>(c->family_names_.size());
        ids.emplace(rule.family, id);
        c->family_names_.push_back(rule.family);
        c->family_kinds_.push_back(rule.kind);
        first_origin.push_back(where);
      } else {
        id = it->second;
        if (c->family_kinds_[id] != rule.kind) {
          return MakeError(ErrorCode::kConfig,
                           where + ": family '" + rule.family + "' declared as " +
                               std::string(FamilyKindName(rule.kind)) + " but as " +
                               std::string(FamilyKindName(c->family_kinds_[id])) + " at " +
                               first_origin[id]);
        }
      }
    }
    CompiledRule cr;
    cr.family = id;
    for (const Condition& cond : rule.all_of) {
      if (cond.patterns.empty()) {
        return MakeError(ErrorCode::kConfig,
                         where + ": rule for family '" + rule.family + "' has an empty condition");
      }
      CompiledCondition cc;
      cc.op = cond.op;
      cc.patterns = cond.patterns;
      if (cond.op == MatchOp::kContains || cond.op == MatchOp::kNotContains) {
        for (const auto& p : cond.patterns) {
          cc.searchers.push_back(std::make_unique<CompiledCondition::Searcher>(p));
        }
      }
      if (cond.op == MatchOp::kRegex) {
        for (const auto& p : cond.patterns) {
          try {
            cc.regexes.emplace_back(p, std::regex::ECMAScript | std::regex::optimize);
            cc.anchored.push_back(RegexAnchoredAtStart(p) ? 1 : 0);
          } catch (const std::regex_error& e) {
            return MakeError(ErrorCode::kConfig, where + ": family '" + rule.family +
                                                     "': bad regex '" + p + "': " + e.what());
          }
        }
      }
      cr.all_of.push_back(std::move(cc));
    }
    c->compiled_->rules.push_back(std::move(cr));
  }
  c->family_names_.push_back(set.other_family);
  c->family_kinds_.push_back(FamilyKind::kCompute);
  const FamilyId other = c->OtherId();
  for (auto& r : c->compiled_->rules) {
    if (r.family == kOtherPending) r.family = other;
  }
  return std::shared_ptr<const Classifier>(std::move(c));
}

std::string_view KernelNameWithoutParameters(std::string_view name) {
  if (!name.ends_with(')')) return name;
  int depth = 0;
  for (size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') {
      ++depth;
    } else if (name[i] == '(' && --depth == 0) {
      // "Memcpy HtoD (Pageable -> Device)": a list after a space is part
      // of the name, not the parameters of a function.
      if (i == 0 || name[i - 1] == ' ') return name;
      return name.substr(0, i);
    }
  }
  return name;  // unbalanced: kept whole
}

FamilyId Classifier::Classify(std::string_view kernel_name) const {
  // A longer name is judged on its ends alone (kClassifiedEnd).
  if (kernel_name.size() > 2 * kClassifiedEnd) {
    std::string ends;
    ends.reserve(2 * kClassifiedEnd);
    ends.append(kernel_name.substr(0, kClassifiedEnd));
    ends.append(kernel_name.substr(kernel_name.size() - kClassifiedEnd));
    return Classify(ends);
  }
  if (!whole_names_) kernel_name = KernelNameWithoutParameters(kernel_name);
  for (const CompiledRule& rule : compiled_->rules) {
    bool all = true;
    for (const CompiledCondition& cond : rule.all_of) {
      if (!Holds(cond, kernel_name)) {
        all = false;
        break;
      }
    }
    if (all) return rule.family;
  }
  return OtherId();
}

bool DrillIsKernelName(std::string_view name) {
  if (name.ends_with(".kd") || name.starts_with("ncclDevKernel")) return true;
  for (std::string_view marker : {".kd]", "primus_turbo::", "ck_tile::", "aiter",
                                  "rocprim::", "Cijk_", "stream_executor::"}) {
    if (name.find(marker) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace profwatch::classify
