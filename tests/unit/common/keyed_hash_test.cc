#include "common/keyed_hash.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>

namespace eoc {
namespace {

KeyedHash::Key Counting() {
  KeyedHash::Key key{};
  for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<unsigned char>(i);
  return key;
}

// SipHash-2-4's reference vector (Aumasson and Bernstein's paper, appendix A): key 00..0f, the
// 8-byte message 00..07, output 62 24 93 9a 79 f5 f5 93 read as a little-endian word.
TEST(KeyedHashTest, IsSipHash24) {
  const KeyedHash hash(Counting());
  EXPECT_EQ(hash(std::string_view("\x00\x01\x02\x03\x04\x05\x06\x07", 8)), 0x93f5f5799a932462ULL);
  // A 64-bit value is hashed as its 8 bytes in memory order.
  EXPECT_EQ(hash(std::uint64_t{0x0706050403020100ULL}), 0x93f5f5799a932462ULL);
  // The empty message (vector 0): 31 0e 0e dd 47 db 6f 72.
  EXPECT_EQ(hash(std::string_view()), 0x726fdb47dd0e0e31ULL);
}

TEST(KeyedHashTest, AnotherKeyAnotherHash) {
  KeyedHash::Key other = Counting();
  other[0] ^= 1U;
  EXPECT_NE(KeyedHash(Counting())(std::uint64_t{42}), KeyedHash(other)(std::uint64_t{42}));
}

TEST(KeyedHashTest, TheProcessKeyIsRandomAndStable) {
  const KeyedHash& process = KeyedHash::ForProcess();
  EXPECT_EQ(&process, &KeyedHash::ForProcess());
  EXPECT_EQ(process(std::uint64_t{7}), KeyedHash::ForProcess()(std::uint64_t{7}));
  // Not the all-zero key nor the counting one (a chance of 2^-127).
  EXPECT_NE(process(std::uint64_t{7}), KeyedHash(KeyedHash::Key{})(std::uint64_t{7}));
  EXPECT_NE(process(std::uint64_t{7}), KeyedHash(Counting())(std::uint64_t{7}));
  std::set<std::uint64_t> seen;
  for (std::uint64_t i = 0; i < 1000; ++i) seen.insert(process(i));
  EXPECT_EQ(seen.size(), 1000U);
}

}  // namespace
}  // namespace eoc
