// The verbs. Each takes its arguments (after the verb) and returns the
// process exit code; main() only dispatches.
#pragma once

#include <string>
#include <vector>

namespace profwatch::cli {

int RunAnalyze(const std::vector<std::string>& args);
int RunServe(const std::vector<std::string>& args);
int RunCompare(const std::vector<std::string>& args);
int RunProbe(const std::vector<std::string>& args);

}  // namespace profwatch::cli
