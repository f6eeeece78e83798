// The caps are declared once (core/caps.h): docs/security.md lists them as
// RenderCapsTable() prints them, and the stages' defaults are the declared
// values.
#include "core/caps.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace profwatch::caps {
namespace caps_test {

std::string ReadDoc(const std::string& name) {
  std::ifstream in(std::string(PROFWATCH_SOURCE_DIR) + "/docs/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The table after `marker` in docs/<doc_name> (up to its blank line).
std::string DocTableAfter(const std::string& marker, const std::string& doc_name = "security.md") {
  const std::string doc = ReadDoc(doc_name);
  const size_t at = doc.find(marker);
  if (at == std::string::npos) return "(no marker " + marker + ")";
  const size_t start = doc.find('\n', at) + 1;
  const size_t end = doc.find("\n\n", start);
  if (end == std::string::npos) return "(no blank line after " + marker + ")";
  return doc.substr(start, end - start + 1);
}

TEST(CapsTest, SecurityDocListsEveryOwnerCapFromItsDeclaration) {
  EXPECT_EQ(DocTableAfter("<!-- caps table: core/caps.h kOwnerCaps"), RenderCapsTable(kOwnerCaps))
      << "print core/caps.h's table into docs/security.md after the marker";
}

TEST(CapsTest, SecurityDocListsEveryDaemonCapFromItsDeclaration) {
  EXPECT_EQ(DocTableAfter("<!-- caps table: core/caps.h kDaemonCaps"), RenderCapsTable(kDaemonCaps))
      << "print core/caps.h's table into docs/security.md after the marker";
}

TEST(CapsTest, RocprofDocListsEveryReaderCapFromItsDeclaration) {
  EXPECT_EQ(DocTableAfter("<!-- caps table: core/caps.h kRocprofReaderCaps", "rocprof.md"),
            RenderCapsTable(kRocprofReaderCaps))
      << "print core/caps.h's table into docs/rocprof.md after the marker";
  const std::string table = RenderCapsTable(kRocprofReaderCaps);
  EXPECT_NE(table.find("| `kMaxRocprofAgents (parse/rocprof_reader.h)` "
                       "(`reason=\"agent_limit\"`) | 1,024 |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| `RocprofOptions::max_record_bytes (parse/rocprof_reader.h)` "
                       "(`reason=\"record_too_large\"`) | 1 MiB |"),
            std::string::npos)
      << table;
}

TEST(CapsTest, TheDaemonTableShowsUnits) {
  const std::string table = RenderCapsTable(kDaemonCaps);
  EXPECT_NE(table.find("| `--file-max-bytes N` (`reason=\"over_budget\"`) | 8 GiB |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| `--window-max-seconds S` (`reason=\"over_budget\"`) | 3,600 s |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| `--max-state-bytes N` (`reason=\"state_cap\"`) | 512 MiB |"),
            std::string::npos)
      << table;
}

TEST(CapsTest, TheTableShowsEachDefaultAndReason) {
  const std::string table = RenderCapsTable(kOwnerCaps);
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
