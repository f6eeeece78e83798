// The per-owner caps are declared once (core/caps.h): docs/security.md lists
// them as RenderOwnerCapsTable() prints them, and the stages' defaults are
// the declared values.
#include "core/caps.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace profwatch::caps {
namespace caps_test {

std::string ReadSecurityDoc() {
  std::ifstream in(std::string(PROFWATCH_SOURCE_DIR) + "/docs/security.md");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CapsTest, SecurityDocListsEveryOwnerCapFromItsDeclaration) {
  const std::string doc = ReadSecurityDoc();
  const std::string marker = "<!-- caps table: core/caps.h RenderOwnerCapsTable()";
  const size_t at = doc.find(marker);
  ASSERT_NE(at, std::string::npos) << "docs/security.md lost its caps table marker";
  const size_t start = doc.find('\n', at) + 1;
  const size_t end = doc.find("\n\n", start);
  ASSERT_NE(end, std::string::npos);
  EXPECT_EQ(doc.substr(start, end - start + 1), RenderOwnerCapsTable())
      << "print core/caps.h's table into docs/security.md after the marker";
}

TEST(CapsTest, TheTableShowsEachDefaultAndReason) {
  const std::string table = RenderOwnerCapsTable();
  EXPECT_NE(table.find("| `--max-runs-per-owner N` (`reason=\"owner_run_cap\"`) | 1,000 |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| `--history-max-bytes N` | 64 MiB |"), std::string::npos) << table;
  EXPECT_NE(table.find("| `--max-dirs-per-owner N` (`reason=\"owner_dir_cap\"`) | 100,000 |"),
            std::string::npos)
      << table;
}

}  // namespace caps_test
}  // namespace profwatch::caps
