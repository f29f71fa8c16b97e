// Prefix hashing exactly as DESIGN.md's pick endpoint defines it, so that clients, gateways and
// every replica agree on a prompt's block hashes: the prompt's UTF-8 bytes cut into blocks of
// `blockSizeTokens * 4` bytes (the last partial block ignored); s = XXH64(model name, seed 0);
// h1 = XXH64(block 1, seed s), hi = XXH64(block i, seed h(i-1)); the list is h1..hn, at most 256.
// Each hash is seeded by the one before, so hi names the whole prefix of blocks 1..i.
// On the wire a hash is 16 hex digits.
//
//   std::vector<eoc::routing::BlockHash> blocks =
//       eoc::routing::PrefixHashes("llama-3-8b", prompt, /*block_size_tokens=*/16);
//   std::string text = eoc::routing::FormatBlockHash(blocks[0]);     // "3f2a9c0d1e4b5a67"
//   std::optional<BlockHash> back = eoc::routing::ParseBlockHash(text);  // == blocks[0]
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "routing/ids.h"

namespace eoc::routing {

// Bytes per token in the block size: a rough token size that needs no tokenizer.
inline constexpr std::size_t kPrefixBytesPerToken = 4;
// Hashes used at most, whether computed here or given by a caller.
inline constexpr std::size_t kMaxPrefixBlocks = 256;

// The block hashes of `prompt` (bytes as given, never normalised) for `model`. Empty when the
// prompt is shorter than one block or when block_size_tokens is 0.
std::vector<BlockHash> PrefixHashes(std::string_view model, std::string_view prompt,
                                    std::size_t block_size_tokens);

// Exactly 16 hex digits (either case, no prefix or sign); nullopt otherwise.
std::optional<BlockHash> ParseBlockHash(std::string_view text);
// 16 lower-case hex digits, zero-padded.
std::string FormatBlockHash(BlockHash hash);

}  // namespace eoc::routing
