#include "routing/prefix_hash.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <string>
#include <vector>

namespace eoc::routing {
namespace {

// DESIGN.md's definition, written out again from XXH64 calls: the reference the code must match.
std::vector<BlockHash> Reference(const std::string& model, const std::string& prompt,
                                 std::size_t block_size_tokens, std::size_t max_blocks) {
  std::vector<BlockHash> hashes;
  const std::size_t block_bytes = block_size_tokens * 4;
  XXH64_hash_t previous = XXH64(model.data(), model.size(), 0);
  for (std::size_t offset = 0; offset + block_bytes <= prompt.size() && hashes.size() < max_blocks;
       offset += block_bytes) {
    previous = XXH64(prompt.data() + offset, block_bytes, previous);
    hashes.push_back(previous);
  }
  return hashes;
}

std::string Repeat(const std::string& text, std::size_t times) {
  std::string out;
  for (std::size_t i = 0; i < times; ++i) out += text;
  return out;
}

TEST(PrefixHashTest, KnownVector) {
  // 44 bytes with 16-byte blocks (4 tokens): two blocks, the last 12 bytes ignored. Pinned, so a
  // client in another language can check its implementation against these numbers.
  const auto hashes = PrefixHashes("llama-3-8b", "You are a helpful assistant. Answer briefly.", 4);
  ASSERT_EQ(hashes.size(), 2U);
  EXPECT_EQ(hashes[0], 0x98c10c534e9846d9ULL);
  EXPECT_EQ(hashes[1], 0x49cd1a79a5d7f171ULL);
  // The model seed itself is not in the list.
  EXPECT_NE(hashes[0], 0xe39251d9742ebb6dULL);
}

TEST(PrefixHashTest, ChainsEachBlockOnThePrevious) {
  const std::string prompt = Repeat("The quick brown fox jumps over the lazy dog. ", 40);
  for (const std::size_t tokens : {1U, 4U, 16U, 64U}) {
    EXPECT_EQ(PrefixHashes("m", prompt, tokens), Reference("m", prompt, tokens, 256))
        << "block size " << tokens;
  }
  // Repeated blocks hash differently, since each is seeded by its prefix.
  const auto hashes = PrefixHashes("m", std::string(64, 'a'), 4);
  ASSERT_EQ(hashes.size(), 4U);
  EXPECT_NE(hashes[0], hashes[1]);
  EXPECT_NE(hashes[1], hashes[2]);
}

TEST(PrefixHashTest, SharedPrefixesShareLeadingHashes) {
  const std::string system = Repeat("system prompt ", 20);  // 280 bytes: 4 blocks of 64
  const auto a = PrefixHashes("m", system + "question one: what is the capital of France?", 16);
  const auto b = PrefixHashes("m", system + "question two: how far away is the moon, roughly?", 16);
  ASSERT_EQ(a.size(), 5U);
  ASSERT_EQ(b.size(), 5U);
  EXPECT_EQ(std::vector(a.begin(), a.begin() + 4), std::vector(b.begin(), b.begin() + 4));
  // Block 5 mixes the end of the system prompt with the question.
  EXPECT_NE(a[4], b[4]);
  // Another model seeds another chain.
  EXPECT_NE(PrefixHashes("other", system, 16), PrefixHashes("m", system, 16));
}

TEST(PrefixHashTest, EmptyShortAndPartialPrompts) {
  EXPECT_TRUE(PrefixHashes("m", "", 16).empty());
  EXPECT_TRUE(PrefixHashes("m", std::string(63, 'x'), 16).empty());  // under one 64-byte block
  EXPECT_EQ(PrefixHashes("m", std::string(64, 'x'), 16).size(), 1U);
  // The last partial block is ignored: 2.5 blocks hash as 2.
  const std::string prompt = Repeat("0123456789abcdef", 10);  // 160 bytes
  const auto partial = PrefixHashes("m", prompt, 16);
  EXPECT_EQ(partial, PrefixHashes("m", prompt.substr(0, 128), 16));
  EXPECT_EQ(partial.size(), 2U);
  // A zero block size hashes nothing (the API layer rejects it).
  EXPECT_TRUE(PrefixHashes("m", prompt, 0).empty());
  // An empty model name is a model name like any other.
  EXPECT_EQ(PrefixHashes("", prompt, 16), Reference("", prompt, 16, 256));
}

TEST(PrefixHashTest, AtMost256Blocks) {
  const std::string prompt(1200, 'z');  // 300 one-token (4-byte) blocks
  const auto hashes = PrefixHashes("m", prompt, 1);
  ASSERT_EQ(hashes.size(), kMaxPrefixBlocks);
  EXPECT_EQ(hashes, Reference("m", prompt, 1, 256));
  EXPECT_EQ(hashes, PrefixHashes("m", prompt.substr(0, 1024), 1));
}

TEST(PrefixHashTest, HashesUtf8BytesAsGiven) {
  // "é" composed (2 bytes) and decomposed ("e" + U+0301, 3 bytes): no normalisation, so they
  // differ; and a block boundary may cut a character in two (bytes, not characters, count).
  const std::string composed = Repeat("caf\xC3\xA9 ", 12);     // 72 bytes
  const std::string decomposed = Repeat("cafe\xCC\x81 ", 12);  // 84 bytes
  EXPECT_EQ(PrefixHashes("m", composed, 1), Reference("m", composed, 1, 256));
  EXPECT_EQ(PrefixHashes("m", decomposed, 1), Reference("m", decomposed, 1, 256));
  EXPECT_NE(PrefixHashes("m", composed, 1)[1], PrefixHashes("m", decomposed, 1)[1]);
  // The euro sign (3 bytes) is bytes 4..6: block 1 ends inside it.
  const std::string cut = "abc\u20ACdefg";
  EXPECT_EQ(PrefixHashes("m", cut, 1), Reference("m", cut, 1, 256));
  EXPECT_EQ(PrefixHashes("m", cut, 1).size(), 2U);
}

TEST(PrefixHashTest, FormatsAndParsesSixteenHexDigits) {
  EXPECT_EQ(FormatBlockHash(0), "0000000000000000");
  EXPECT_EQ(FormatBlockHash(0x98c10c534e9846d9ULL), "98c10c534e9846d9");
  EXPECT_EQ(FormatBlockHash(0xABCULL), "0000000000000abc");
  EXPECT_EQ(FormatBlockHash(~0ULL), "ffffffffffffffff");
  EXPECT_EQ(ParseBlockHash("98c10c534e9846d9"), 0x98c10c534e9846d9ULL);
  EXPECT_EQ(ParseBlockHash("98C10C534E9846D9"), 0x98c10c534e9846d9ULL);
  EXPECT_EQ(ParseBlockHash("0000000000000abc"), 0xABCULL);
  EXPECT_EQ(ParseBlockHash("ffffffffffffffff"), ~0ULL);
  for (const BlockHash h : PrefixHashes("m", std::string(640, 'q'), 16)) {
    EXPECT_EQ(ParseBlockHash(FormatBlockHash(h)), h);
  }
}

TEST(PrefixHashTest, RejectsMalformedHex) {
  for (const char* bad : {"", "abc", "98c10c534e9846d", "98c10c534e9846d90", "0x98c10c534e9846",
                          "98c10c534e9846dg", "-8c10c534e9846d9", "+8c10c534e9846d9",
                          " 8c10c534e9846d9", "98c10c534e9846d ", "98c10c53\n4e9846d"}) {
    EXPECT_EQ(ParseBlockHash(bad), std::nullopt) << "'" << bad << "'";
  }
  EXPECT_EQ(ParseBlockHash(std::string_view("98c10c53\0e9846d9", 16)), std::nullopt);
}

}  // namespace
}  // namespace eoc::routing
