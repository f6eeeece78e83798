// The `kernel` label value of the kernel metrics: a short, readable form
// of a kernel name, so that series stay few and stable across windows.
// Demangled C++ kernel names carry template arguments and parameter lists that
// change with every shape or dtype and run to hundreds of characters; label
// values like that multiply series and are unreadable on a dashboard. Reports
// (analyze, compare, JSON) keep the full names.
//
// Thread-safety: pure function.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "figures/limits.h"

namespace profwatch::figures {

// "void ns::kernel<4, F<float>>(int, F<float>) const" -> "ns::kernel".
// Drops a leading "void " return type, every <...> template argument list and
// the trailing (...) parameter list (with any cv/ref qualifiers after it);
// keeps other parentheses, such as "(anonymous namespace)::", and operator
// names such as "operator()". A name whose brackets do not balance is kept as
// it is. The result is cut to kMaxKernelLabelBytes. Names that shorten to the
// same value are one series: the caller sums them.
std::string ShortKernelName(std::string_view name);

// `s` cut to at most `max_bytes` on a UTF-8 character boundary.
std::string CutUtf8(std::string s, size_t max_bytes);

}  // namespace profwatch::figures
