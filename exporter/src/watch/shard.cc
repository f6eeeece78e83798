#include "watch/shard.h"

#include <nettle/md5.h>

#include <charconv>

namespace profwatch::watch {
namespace {

// A decimal number made of digits only (no sign, no spaces).
bool ParseDecimal(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

uint64_t HashMod(std::string_view value, uint64_t modulus) {
  md5_ctx ctx;
  md5_init(&ctx);
  md5_update(&ctx, value.size(), reinterpret_cast<const uint8_t*>(value.data()));
  uint8_t digest[MD5_DIGEST_SIZE];
  md5_digest(&ctx, MD5_DIGEST_SIZE, digest);
  uint64_t tail = 0;
  for (int i = 8; i < 16; ++i) tail = (tail << 8) | digest[i];
  return tail % modulus;
}

Result<Shard> ParseShard(std::string_view text) {
  if (text.empty()) return Shard{};
  auto bad = [&](std::string_view why) {
    return MakeError(ErrorCode::kConfig, "--shard " + std::string(text) + ": " + std::string(why) +
                                             " (want I/N, or POD-NAME-I/N, with 0 <= I < N)");
  };
  const size_t slash = text.rfind('/');
  if (slash == std::string_view::npos) return bad("no '/'");
  std::string_view index_text = text.substr(0, slash);
  const std::string_view count_text = text.substr(slash + 1);
  // A pod name: the ordinal after its last '-'.
  const size_t dash = index_text.rfind('-');
  if (dash == 0) return bad("I is negative or the pod name is empty");
  if (dash != std::string_view::npos) index_text = index_text.substr(dash + 1);
  Shard shard;
  if (!ParseDecimal(count_text, &shard.count) || shard.count == 0) {
    return bad("N is not a positive number");
  }
  if (!ParseDecimal(index_text, &shard.index)) return bad("I is not a number");
  if (shard.index >= shard.count) return bad("I is not below N");
  return shard;
}

}  // namespace profwatch::watch
