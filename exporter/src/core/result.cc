#include "core/result.h"

namespace profwatch {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kPermission:
      return "permission";
    case ErrorCode::kIo:
      return "io";
    case ErrorCode::kTruncated:
      return "truncated";
    case ErrorCode::kCorrupt:
      return "corrupt";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kTooLarge:
      return "too_large";
    case ErrorCode::kOverBudget:
      return "over_budget";
    case ErrorCode::kConfig:
      return "config";
    case ErrorCode::kInternal:
      return "internal";
    case ErrorCode::kCrashed:
      return "crashed";
  }
  return "internal";
}

Error& Error::Wrap(std::string_view outer) {
  std::string merged(outer);
  if (!context.empty()) {
    merged += ": ";
    merged += context;
  }
  context = std::move(merged);
  return *this;
}

std::string Error::ToString() const {
  std::string out(ErrorCodeName(code));
  if (!context.empty()) {
    out += ": ";
    out += context;
  }
  return out;
}

RetryClass RetryClassOf(ErrorCode code) {
  switch (code) {
    case ErrorCode::kIo:
    case ErrorCode::kNotFound:
    case ErrorCode::kTruncated:
      return RetryClass::kSoon;
    case ErrorCode::kCorrupt:
    case ErrorCode::kPermission:
    // The same bytes would run out of the same budget: read again only when
    // the file changes (and given up after --max-retries like the others).
    case ErrorCode::kOverBudget:
      return RetryClass::kOnChange;
    default:
      return RetryClass::kNever;
  }
}

}  // namespace profwatch
