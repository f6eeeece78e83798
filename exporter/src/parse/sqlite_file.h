// SQLite plumbing shared by the readers of SQLite trace files (the Nsight
// Systems export, rocprofiler-sdk's rocpd database): the read-only URI of a
// path, an sqlite3 result code as an ErrorCode, owners that close a
// database and finalize a statement, and UntrustedFile, the connection
// both readers open on a file someone else wrote. Not thread-safe beyond
// SQLite's own rules: one connection per reader.
#pragma once

#include <sqlite3.h>

#include <string>
#include <string_view>
#include <utility>

#include "core/budget.h"
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

// A trace database someone else wrote, opened read-only and immutable. The
// file is refused while a rollback journal or WAL lies beside it (a writer
// is, or was, in the middle of a transaction: immutable reads would see
// its half-written pages). None of its views or triggers run, no function
// its schema names is trusted, no value longer than kMaxValueBytes is
// read, and with a budget every query checks it every kProgressOps
// virtual-machine steps and is interrupted once it is spent.
class UntrustedFile {
 public:
  // `path` names the file and its journal; `open_as`, when not empty, is
  // the path SQLite opens instead (a descriptor the caller checked and
  // holds open). `budget` may be null (no limit).
  UntrustedFile(std::string path, std::string open_as, FileBudget* budget)
      : path_(std::move(path)),
        open_as_(open_as.empty() ? path_ : std::move(open_as)),
        budget_(budget) {}

  // Opens the file, charging its size to the budget when `charge`. kIo
  // "still being written" names `writer` ("an export") when a journal or
  // WAL lies beside it.
  Status Open(std::string_view writer, bool charge);
  Result<Statement> Prepare(const std::string& sql);
  // The error for a failed sqlite3 call (`rc`) while doing `what`: the
  // budget's own when it interrupted the query, else `what` with SQLite's
  // message.
  tl::unexpected<Error> Fail(int rc, std::string_view what) const;

 private:
  static int Progress(void* self);

  std::string path_;
  std::string open_as_;
  FileBudget* budget_;
  bool interrupted_ = false;  // the progress handler stopped a query
  Db db_;
};

}  // namespace profwatch::parse::sqlite
