// User family rules (YAML; JSON is YAML too), parsed with yaml-cpp.
//
// Schema (every key below is the whole vocabulary; any other key is an error):
//
//   base: nvidia          # optional: drill | nvidia | amd | none. Replaces the base
//                         # set passed by the caller (default: keep it).
//   other: unmatched      # optional: name of the family of unmatched names
//                         # (default: the base set's, e.g. "Other kernels").
//   rules:                # required, a list (may be empty)
//     - family: my_gemm   # required, non-empty
//       kind: compute     # optional: compute | math | comm | memory; default:
//                         # the base set's kind of that family, else compute
//       replace: true     # optional (default false): drop the base set's
//                         # rules of this family; the base must have it
//       match:            # required, at least one condition; ALL must hold
//         contains: foo           # a string or a non-empty list of strings;
//         prefix: [a, b]          # a list holds when ANY element matches
//         suffix: .kd             #   (not_contains: when NONE is contained)
//         regex: 'gemm_[0-9]+'    # ECMAScript, searched anywhere in the name
//         not_contains: deep_ep
//
// The file's rules come first, in file order, so they win over the base set.
// Patterns are matched against the kernel's own name, without its top-level
// parameter list (classifier.h KernelNameWithoutParameters: `f<T>(int, X)`
// is matched as `f<T>`), except on base drill, which matches whole names as
// profile_drill.py does.
// Errors are kConfig "<origin>:<line>: <message>" (line 1-based, from the
// yaml-cpp mark of the offending node). Patterns must be non-empty; regexes
// are compiled here (and again, once, by Classifier::Create) and are capped at
// kMaxRegexBytes to bound the regex compiler's recursion on hostile input.
// Numbers in a {n,m} count or a \N back-reference are capped at
// kMaxRegexNumberDigits: libstdc++ reads them into a `long` without an
// overflow check (signed overflow, found by fuzz_rules_file), and a count
// that large could never compile anyway (its state limit is 100,000).
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <optional>
// GCC 12 reports a false -Wmaybe-uninitialized inside <regex>'s std::function
// when optimising with sanitizers (the ASan+UBSan CI build); silence it for
// this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <regex>
#include <set>
#include <string_view>

#include "classify/classifier.h"
#include "classify/limits.h"

namespace profwatch::classify {
namespace {

size_t DigitRun(std::string_view s, size_t i) {
  size_t n = 0;
  while (i + n < s.size() && s[i + n] >= '0' && s[i + n] <= '9') ++n;
  return n;
}

// True when a repetition count or back-reference has more digits than
// kMaxRegexNumberDigits. Conservative inside [...] (where '{' is literal).
bool HasOverlongRegexNumber(std::string_view re) {
  for (size_t i = 0; i < re.size(); ++i) {
    if (re[i] == '\\') {
      if (DigitRun(re, i + 1) > kMaxRegexNumberDigits) return true;
      ++i;  // the escaped character
    } else if (re[i] == '{') {
      const size_t lo = DigitRun(re, i + 1);
      if (lo > kMaxRegexNumberDigits) return true;
      if (i + 1 + lo < re.size() && re[i + 1 + lo] == ',' &&
          DigitRun(re, i + 2 + lo) > kMaxRegexNumberDigits) {
        return true;
      }
    }
  }
  return false;
}

// Thrown inside this file only; converted to Result at the boundary.
struct RulesError {
  std::string message;
};

class Parser {
 public:
  explicit Parser(std::string_view origin) : origin_(origin) {}

  [[noreturn]] void Fail(const YAML::Mark& mark, const std::string& msg) const {
    std::string out(origin_);
    if (!mark.is_null() && mark.line >= 0) out += ":" + std::to_string(mark.line + 1);
    out += ": " + msg;
    throw RulesError{std::move(out)};
  }
  [[noreturn]] void Fail(const YAML::Node& node, const std::string& msg) const {
    Fail(node.Mark(), msg);
  }
  std::string Where(const YAML::Node& node) const {
    std::string out(origin_);
    if (!node.Mark().is_null() && node.Mark().line >= 0) {
      out += ":" + std::to_string(node.Mark().line + 1);
    }
    return out;
  }

  std::string Scalar(const YAML::Node& node, const std::string& what) const {
    if (!node.IsScalar()) Fail(node, what + " must be a string");
    return node.Scalar();
  }

  bool Bool(const YAML::Node& node, const std::string& what) const {
    const std::string s = Scalar(node, what);
    if (s == "true") return true;
    if (s == "false") return false;
    Fail(node, what + " must be true or false, got '" + s + "'");
  }

  // Iterates a mapping, rejecting non-scalar and duplicate keys.
  template <class F>
  void ForEachKey(const YAML::Node& map, const std::string& what, F&& f) const {
    if (!map.IsMap()) Fail(map, what + " must be a mapping");
    std::set<std::string> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node key = it->first;
      if (!key.IsScalar()) Fail(key, "keys of " + what + " must be strings");
      if (!seen.insert(key.Scalar()).second) {
        Fail(key, "duplicate key '" + key.Scalar() + "' in " + what);
      }
      f(key, it->second);
    }
  }

  std::vector<std::string> Patterns(const YAML::Node& node, const std::string& op) const {
    std::vector<std::string> out;
    auto one = [&](const YAML::Node& n) {
      if (!n.IsScalar()) Fail(n, "'" + op + "' patterns must be strings");
      if (n.Scalar().empty()) Fail(n, "'" + op + "' pattern is empty");
      if (op == "regex") {
        if (n.Scalar().size() > kMaxRegexBytes) {
          Fail(n, "regex longer than " + std::to_string(kMaxRegexBytes) + " bytes");
        }
        if (HasOverlongRegexNumber(n.Scalar())) {
          Fail(n, "regex count or back-reference longer than " +
                      std::to_string(kMaxRegexNumberDigits) + " digits");
        }
        try {
          std::regex re(n.Scalar(), std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
          Fail(n, "bad regex '" + n.Scalar() + "': " + e.what());
        }
      }
      out.push_back(n.Scalar());
    };
    if (node.IsSequence()) {
      if (node.size() == 0) Fail(node, "'" + op + "' needs at least one pattern");
      for (const auto& n : node) one(n);
    } else if (node.IsScalar()) {
      one(node);
    } else {
      Fail(node, "'" + op + "' must be a string or a list of strings");
    }
    return out;
  }

  Rule ParseRule(const YAML::Node& node, bool* replace, bool* kind_given) const {
    if (!node.IsMap()) Fail(node, "each rule must be a mapping");
    Rule rule;
    rule.origin = Where(node);
    bool has_family = false, has_match = false;
    *replace = false;
    *kind_given = false;
    ForEachKey(node, "a rule", [&](const YAML::Node& key, const YAML::Node& value) {
      const std::string& k = key.Scalar();
      if (k == "family") {
        rule.family = Scalar(value, "family");
        if (rule.family.empty()) Fail(value, "family must not be empty");
        has_family = true;
      } else if (k == "kind") {
        *kind_given = true;
        const std::string kind = Scalar(value, "kind");
        if (kind == "compute") {
          rule.kind = FamilyKind::kCompute;
        } else if (kind == "comm") {
          rule.kind = FamilyKind::kComm;
        } else if (kind == "memory") {
          rule.kind = FamilyKind::kMemory;
        } else if (kind == "math") {
          rule.kind = FamilyKind::kMath;
        } else {
          Fail(value, "kind must be compute, math, comm or memory, got '" + kind + "'");
        }
      } else if (k == "replace") {
        *replace = Bool(value, "replace");
      } else if (k == "match") {
        has_match = true;
        ForEachKey(value, "match", [&](const YAML::Node& mkey, const YAML::Node& mval) {
          const std::string& op = mkey.Scalar();
          Condition c;
          if (op == "contains") {
            c.op = MatchOp::kContains;
          } else if (op == "prefix") {
            c.op = MatchOp::kPrefix;
          } else if (op == "suffix") {
            c.op = MatchOp::kSuffix;
          } else if (op == "regex") {
            c.op = MatchOp::kRegex;
          } else if (op == "not_contains") {
            c.op = MatchOp::kNotContains;
          } else {
            Fail(mkey, "unknown match condition '" + op +
                           "' (expected contains, prefix, suffix, regex, not_contains)");
          }
          c.patterns = Patterns(mval, op);
          rule.all_of.push_back(std::move(c));
        });
        if (rule.all_of.empty()) Fail(value, "match needs at least one condition");
      } else {
        Fail(key, "unknown rule key '" + k + "' (expected family, kind, match, replace)");
      }
    });
    if (!has_family) Fail(node, "rule has no 'family'");
    if (!has_match) Fail(node, "rule for family '" + rule.family + "' has no 'match'");
    return rule;
  }

  RuleSet Parse(std::string_view text, RuleSet base) const {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      Fail(e.mark, "invalid YAML: " + e.msg);
    }
    if (!root.IsMap()) {
      Fail(root, root.IsNull() ? "empty rules file (expected a mapping with 'rules')"
                               : "top level must be a mapping with 'rules'");
    }
    std::vector<std::pair<Rule, bool>> rules;
    bool has_rules = false;
    std::optional<std::string> other;
    ForEachKey(root, "the top level", [&](const YAML::Node& key, const YAML::Node& value) {
      const std::string& k = key.Scalar();
      if (k == "base") {
        const std::string name = Scalar(value, "base");
        if (name == "none") {
          base = RuleSet{};
          base.name = "none";
        } else {
          auto set = BuiltinRuleSet(name);
          if (!set) Fail(value, "base must be drill, nvidia, amd or none, got '" + name + "'");
          base = std::move(*set);
        }
      } else if (k == "other") {
        other = Scalar(value, "other");
        if (other->empty()) Fail(value, "other must not be empty");
      } else if (k == "rules") {
        has_rules = true;
        if (value.IsNull()) return;  // "rules:" with nothing: no rules
        if (!value.IsSequence()) Fail(value, "rules must be a list");
        for (const auto& r : value) {
          bool replace = false, kind_given = false;
          Rule rule = ParseRule(r, &replace, &kind_given);
          // Without a kind, a family of the base set keeps the base's kind
          // (extending `gemm` keeps it math); a new family is compute.
          if (!kind_given) {
            auto b = std::find_if(base.rules.begin(), base.rules.end(),
                                  [&](const Rule& br) { return br.family == rule.family; });
            if (b != base.rules.end()) rule.kind = b->kind;
          }
          rules.emplace_back(std::move(rule), replace);
        }
      } else {
        Fail(key, "unknown top-level key '" + k + "' (expected base, other, rules)");
      }
    });
    if (!has_rules) Fail(root, "missing 'rules'");

    std::set<std::string> replaced;
    for (const auto& entry : rules) {
      if (!entry.second) continue;
      const Rule& rule = entry.first;
      const bool in_base = std::any_of(base.rules.begin(), base.rules.end(),
                                       [&](const Rule& b) { return b.family == rule.family; });
      if (!in_base) {
        throw RulesError{rule.origin + ": replace: true but base set '" + base.name +
                         "' has no family '" + rule.family + "'"};
      }
      replaced.insert(rule.family);
    }
    RuleSet out;
    // A label-friendly name: the user file is not part of it (paths vary).
    out.name =
        (base.name.empty() || base.name == "none") ? std::string("custom") : base.name + "+custom";
    out.other_family = other ? *other : base.other_family;
    out.match_whole_names = base.match_whole_names;  // base drill: the whole name
    for (auto& [rule, replace] : rules) out.rules.push_back(std::move(rule));
    for (auto& b : base.rules) {
      if (!replaced.contains(b.family)) out.rules.push_back(std::move(b));
    }
    return out;
  }

 private:
  std::string_view origin_;
};

}  // namespace

Result<RuleSet> ParseRulesText(std::string_view text, std::string_view origin, RuleSet base) {
  try {
    return Parser(origin).Parse(text, std::move(base));
  } catch (const RulesError& e) {
    return MakeError(ErrorCode::kConfig, e.message);
  } catch (const YAML::Exception& e) {
    std::string msg(origin);
    if (!e.mark.is_null()) msg += ":" + std::to_string(e.mark.line + 1);
    return MakeError(ErrorCode::kConfig, msg + ": " + e.msg);
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kConfig, std::string(origin) + ": " + e.what());
  }
}

Result<RuleSet> LoadRulesFile(const std::string& path, RuleSet base) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return MakeError(ErrorCode::kConfig, path + ": cannot open rules file");
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxRulesFileBytes) {
      return MakeError(ErrorCode::kConfig, path + ": rules file larger than 16 MiB");
    }
  }
  if (in.bad()) return MakeError(ErrorCode::kConfig, path + ": cannot read rules file");
  return ParseRulesText(text, path, std::move(base));
}

}  // namespace profwatch::classify
