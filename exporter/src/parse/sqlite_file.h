// SQLite plumbing shared by the readers of SQLite trace files (the Nsight
// Systems export, rocprofiler-sdk's rocpd database): the read-only URI of a
// path, an sqlite3 result code as an ErrorCode, and owners that close a
// database and finalize a statement. Not thread-safe beyond SQLite's own
// rules: one Db per reader.
#pragma once

#include <sqlite3.h>

#include <string>
#include <utility>

#include "core/result.h"

namespace profwatch::parse::sqlite {

// "file:" URI of `path` with the characters URIs reserve percent-encoded,
// opened immutable (the file is a finished export: no locks, no journal).
std::string ImmutableFileUri(const std::string& path);

// The ErrorCode of an sqlite3 result code (its primary code).
ErrorCode CodeOf(int rc);

struct Db {
  sqlite3* db = nullptr;
  Db() = default;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  ~Db() { sqlite3_close(db); }
};

struct Statement {
  sqlite3_stmt* stmt = nullptr;
  Statement() = default;
  Statement(Statement&& o) noexcept : stmt(std::exchange(o.stmt, nullptr)) {}
  Statement& operator=(Statement&& o) noexcept {
    std::swap(stmt, o.stmt);
    return *this;
  }
  ~Statement() { sqlite3_finalize(stmt); }
};

}  // namespace profwatch::parse::sqlite
