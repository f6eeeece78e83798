// `profwatch compare`'s report: variants side by side, the table users
// build by hand, as text, markdown or JSON ("profwatch.compare.v1"). It
// renders each variant's figures (figures/window_figures.h) and the context
// the caller knows (label, window, training log); it computes nothing. The
// caller (cli/cmd_compare.cc) reads the inputs, decides the step time and
// refuses incomparable variants (CompareMismatches) unless --force. Pure
// functions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "figures/window_figures.h"

namespace profwatch::expose {

// One column of the table: a window's figures for the step the variant
// uses, from its path's analysis or a --history entry's run state.
struct CompareVariant {
  std::string label;
  std::shared_ptr<const figures::WindowFigures> figures;  // never null
  std::string step_log;                                   // the training log of step source "log"
  std::string window;  // the window analysed (job/run/<window id> or the path)
};

enum class CompareFormat { kText, kMarkdown, kJson };

// Why the variants' per-GPU-per-step numbers are not comparable with the
// baseline's (variants[0]), one line each; empty when they are. Launcher
// mode or GPUs per window differ, or profile steps differ where a window's
// count is the default guess (counts each window took from its own markers,
// log or flag compare: the report notes them).
// REQUIRES: variants.size() >= 1.
std::vector<std::string> CompareMismatches(const std::vector<CompareVariant>& variants);

// The report as printed on stdout: the table (text or markdown) and its
// notes, or the JSON document with `mismatches` in it.
// REQUIRES: variants.size() >= 1.
std::string RenderCompare(const std::vector<CompareVariant>& variants,
                          const std::vector<std::string>& mismatches, CompareFormat format);

}  // namespace profwatch::expose
