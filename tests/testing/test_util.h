// Shared test helpers: temp dirs, fixture paths, gzip writing.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace profwatch::testing {

// What a test's own wall-clock bound is multiplied by: 1 in the plain
// build, more in the sanitizer trees, which run the same code slower by
// construction (tests/CMakeLists.txt).
inline constexpr int kTimeFactor = PROFWATCH_TEST_TIME_FACTOR;

// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string Sub(std::string_view rel) const { return (path_ / rel).string(); }

 private:
  std::filesystem::path path_;
};

// Writes `data` to `path`, creating parent directories.
void WriteFile(const std::string& path, std::string_view data);
std::string ReadFile(const std::string& path);

// gzip-compresses `data` (one member, default level).
std::string Gzip(std::string_view data);

// A gzip bomb: one gzip member that inflates to `head`, then `unit` repeated
// until about `inflated_bytes`, then `tail`; about 1/1000 of that in size and
// written in milliseconds (one deflate block of repeats, flushed to a byte
// boundary with its dictionary reset, is copied; the CRC is combined).
std::string GzipBomb(std::string_view head, std::string_view unit, uint64_t inflated_bytes,
                     std::string_view tail);

// Path of a file in ../shared/fixtures (relative to the source dir), or ""
// when the shared fixtures are absent.
std::string SharedFixture(std::string_view rel);
// Path of tests/fixtures/<rel> in the source tree.
std::string ProjectFixture(std::string_view rel);
// Directory of built binaries (profwatch, tools) in the build tree.
std::string BinaryPath(std::string_view name);

// Skips the current test when the shared fixtures are absent.
#define PROFWATCH_REQUIRE_SHARED_FIXTURE(var, rel)                  \
  const std::string var = ::profwatch::testing::SharedFixture(rel); \
  if (var.empty()) GTEST_SKIP() << "shared fixtures absent (../shared/fixtures/" << (rel) << ")"

// Runs a shell command, capturing stdout and stderr separately.
struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
CommandResult RunCommand(const std::string& command, const std::string& cwd = "");

}  // namespace profwatch::testing
