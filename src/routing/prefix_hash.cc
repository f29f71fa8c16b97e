#include "routing/prefix_hash.h"

#include <xxhash.h>

#include <algorithm>
#include <limits>

namespace eoc::routing {

std::vector<BlockHash> PrefixHashes(std::string_view model, std::string_view prompt,
                                    std::size_t block_size_tokens) {
  std::vector<BlockHash> hashes;
  if (block_size_tokens == 0 ||
      block_size_tokens > std::numeric_limits<std::size_t>::max() / kPrefixBytesPerToken) {
    return hashes;
  }
  const std::size_t block_bytes = block_size_tokens * kPrefixBytesPerToken;
  const std::size_t count = std::min(prompt.size() / block_bytes, kMaxPrefixBlocks);
  hashes.reserve(count);
  XXH64_hash_t seed = XXH64(model.data(), model.size(), 0);
  for (std::size_t i = 0; i < count; ++i) {
    seed = XXH64(prompt.data() + i * block_bytes, block_bytes, seed);
    hashes.push_back(seed);
  }
  return hashes;
}

std::optional<BlockHash> ParseBlockHash(std::string_view text) {
  if (text.size() != 16) return std::nullopt;
  BlockHash hash = 0;
  for (const char c : text) {
    unsigned digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<unsigned>(c - 'a') + 10;
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<unsigned>(c - 'A') + 10;
    } else {
      return std::nullopt;
    }
    hash = (hash << 4) | digit;
  }
  return hash;
}

std::string FormatBlockHash(BlockHash hash) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (auto it = text.rbegin(); it != text.rend(); ++it, hash >>= 4) *it = kDigits[hash & 0xF];
  return text;
}

}  // namespace eoc::routing
