// Base64 (RFC 4648, standard alphabet, padded) for the basic auth header:
// decoded by the server (web/basic_auth.h), encoded by `profwatch probe`.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace profwatch::web {

std::string EncodeBase64(std::string_view in);

// nullopt for a character outside the alphabet, data after padding, or
// more than two '='. Trailing bits that do not fill a byte are dropped.
std::optional<std::string> DecodeBase64(std::string_view in);

}  // namespace profwatch::web
