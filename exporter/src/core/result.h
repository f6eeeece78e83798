// Result<T> and the closed set of error codes every stage returns.
// Stages never throw across their boundary; the pipeline decides retries from
// the code (see README "Errors and retries"). Thread-safe: plain values.
#pragma once

#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <utility>

namespace profwatch {

enum class ErrorCode {
  kNotFound,     // file or directory vanished (rename/rotation races)
  kPermission,   // EACCES/EPERM
  kIo,           // read error, transient
  kTruncated,    // input ended early (half-written gzip, cut JSON)
  kCorrupt,      // input is not what it claims (garbage, bad JSON)
  kUnsupported,  // well-formed but not a trace we can read
  kTooLarge,     // exceeds a configured or library limit
  kOverBudget,   // the file's work budget (bytes, time) ran out (core/budget.h)
  kConfig,       // bad flag, rules or config file
  kInternal,     // a bug or an unexpected exception
  // The daemon died (killed: out of memory, a crash) while analysing the
  // window, twice (pipeline/window_policy.h DecideInflight).
  kCrashed,
};

// Stable snake_case name, used as the `reason` label of error counters.
std::string_view ErrorCodeName(ErrorCode code);
// Every code, in declaration order: counters by reason are created for all
// of them up front, so a first error is an increase from 0 like any other.
inline constexpr ErrorCode kAllErrorCodes[] = {
    ErrorCode::kNotFound, ErrorCode::kPermission,  ErrorCode::kIo,       ErrorCode::kTruncated,
    ErrorCode::kCorrupt,  ErrorCode::kUnsupported, ErrorCode::kTooLarge, ErrorCode::kOverBudget,
    ErrorCode::kConfig,   ErrorCode::kInternal,    ErrorCode::kCrashed};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string context;  // what and where, outermost first: "file x: offset 12: ..."

  // Prepends `outer` ("path/to/file") to the context as the error climbs.
  Error& Wrap(std::string_view outer);
  std::string ToString() const;  // "<code>: <context>"
};

template <class T>
using Result = tl::expected<T, Error>;

using Status = tl::expected<void, Error>;

inline tl::unexpected<Error> MakeError(ErrorCode code, std::string context) {
  return tl::unexpected<Error>(Error{code, std::move(context)});
}

// Retry policy class of an error (the pipeline, not the stage, decides).
enum class RetryClass {
  kSoon,      // transient: retry with backoff
  kOnChange,  // retry only when the file's identity/size/mtime changes
  kNever,     // count, report, move on
};
RetryClass RetryClassOf(ErrorCode code);

}  // namespace profwatch
