// See sqlite_file.h.
#include "parse/sqlite_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "parse/limits.h"

namespace profwatch::parse::sqlite {

std::string ImmutableFileUri(const std::string& path) {
  std::string uri = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#' || static_cast<unsigned char>(c) < 0x21) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      uri += buf;
    } else {
      uri += c;
    }
  }
  return uri + "?immutable=1";
}

ErrorCode CodeOf(int rc) {
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_FORMAT:
      return ErrorCode::kCorrupt;
    case SQLITE_CANTOPEN:
      return ErrorCode::kNotFound;
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return ErrorCode::kPermission;
    case SQLITE_NOMEM:
    case SQLITE_TOOBIG:
      return ErrorCode::kTooLarge;
    default:
      return ErrorCode::kIo;
  }
}

Status UntrustedFile::Open(std::string_view writer, bool charge) {
  struct stat st;
  for (const char* suffix : {"-journal", "-wal"}) {
    const std::string side = path_ + suffix;
    if (::stat(side.c_str(), &st) == 0) {
      return MakeError(ErrorCode::kIo, "still being written (" + side +
                                           " exists): " + std::string(writer) +
                                           " in progress or an interrupted one");
    }
  }
  if (::stat(path_.c_str(), &st) != 0) {
    const int e = errno;
    return MakeError(e == EACCES || e == EPERM ? ErrorCode::kPermission : ErrorCode::kNotFound,
                     "cannot open: " + std::string(std::strerror(e)));
  }
  if (charge && budget_ != nullptr) {
    if (auto s = budget_->AddRead(static_cast<uint64_t>(st.st_size)); !s) return s;
  }
  // NOMUTEX: the connection belongs to one reader on one thread, so SQLite
  // need not lock it around every column read.
  const int rc =
      sqlite3_open_v2(ImmutableFileUri(open_as_).c_str(), &db_.db,
                      SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) return Fail(rc, "cannot open as SQLite");
  sqlite3_db_config(db_.db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
  sqlite3_db_config(db_.db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  sqlite3_db_config(db_.db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db_.db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_limit(db_.db, SQLITE_LIMIT_LENGTH, kMaxValueBytes);
  if (budget_ != nullptr) sqlite3_progress_handler(db_.db, kProgressOps, &Progress, this);
  // Sorting or large joins would spill to temp files; keep any in memory.
  sqlite3_exec(db_.db, "PRAGMA temp_store=MEMORY", nullptr, nullptr, nullptr);
  return {};
}

Result<Statement> UntrustedFile::Prepare(const std::string& sql) {
  Statement s;
  const int rc = sqlite3_prepare_v2(db_.db, sql.c_str(), -1, &s.stmt, nullptr);
  if (rc != SQLITE_OK) return Fail(rc, "query failed");
  return s;
}

tl::unexpected<Error> UntrustedFile::Fail(int rc, std::string_view what) const {
  if (interrupted_ && budget_ != nullptr) {
    if (auto s = budget_->Check(); !s) return tl::unexpected(s.error());
  }
  std::string msg = std::string(what);
  if (db_.db != nullptr) {
    msg += ": ";
    msg += sqlite3_errmsg(db_.db);
  }
  if ((rc & 0xff) == SQLITE_NOTADB) msg += " (not an SQLite database)";
  return MakeError(CodeOf(rc), std::move(msg));
}

int UntrustedFile::Progress(void* self) {
  auto* file = static_cast<UntrustedFile*>(self);
  if (file->budget_->Check()) return 0;
  file->interrupted_ = true;
  return 1;
}

}  // namespace profwatch::parse::sqlite
