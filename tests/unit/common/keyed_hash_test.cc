#include "common/keyed_hash.h"

#include <gtest/gtest.h>
#include <sodium.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>

namespace eoc {
namespace {

// The key 00 01 .. 0f, as SipHash's reference vectors use it.
constexpr std::uint64_t kK0 = 0x0706050403020100ULL;
constexpr std::uint64_t kK1 = 0x0f0e0d0c0b0a0908ULL;

// SipHash-2-4's reference vector for the 8-byte message 00 01 .. 07 (Aumasson and Bernstein's
// paper, appendix A; vector 8 of the reference implementation's 64): the rounds, the length
// block and the finalization are SipHash's.
TEST(KeyedHashTest, TheRoundsAreSipHashs) {
  static_assert(SipHashWord<2, 4>(kK0, kK1, 0x0706050403020100ULL) == 0x93f5f5799a932462ULL);
  // And libsodium's crypto_shorthash (SipHash-2-4) agrees on random keys and messages.
  ASSERT_GE(sodium_init(), 0);
  std::mt19937_64 random(7);
  for (int i = 0; i < 10'000; ++i) {
    const std::array<std::uint64_t, 2> key = {random(), random()};
    const std::uint64_t message = random();
    std::array<unsigned char, crypto_shorthash_BYTES> out{};
    crypto_shorthash(out.data(), reinterpret_cast<const unsigned char*>(&message), sizeof(message),
                     reinterpret_cast<const unsigned char*>(key.data()));
    std::uint64_t expected = 0;
    std::memcpy(&expected, out.data(), sizeof(expected));
    ASSERT_EQ((SipHashWord<2, 4>(key[0], key[1], message)), expected) << i;
  }
}

TEST(KeyedHashTest, IsSipHash13OfItsKey) {
  const KeyedHash hash(kK0, kK1);
  EXPECT_EQ(hash(42), (SipHashWord<1, 3>(kK0, kK1, 42)));
  EXPECT_NE(hash(42), (SipHashWord<2, 4>(kK0, kK1, 42)));
  EXPECT_NE(hash(42), KeyedHash(kK0 ^ 1U, kK1)(42));
}

TEST(KeyedHashTest, TheProcessKeyIsRandomAndStable) {
  const KeyedHash& process = KeyedHash::ForProcess();
  EXPECT_EQ(&process, &KeyedHash::ForProcess());
  EXPECT_EQ(process(7), KeyedHash::ForProcess()(7));
  // Not the all-zero key nor the counting one (a chance of 2^-127).
  EXPECT_NE(process(7), KeyedHash(0, 0)(7));
  EXPECT_NE(process(7), KeyedHash(kK0, kK1)(7));
  std::set<std::uint64_t> seen;
  for (std::uint64_t i = 0; i < 1000; ++i) seen.insert(process(i));
  EXPECT_EQ(seen.size(), 1000U);
}

}  // namespace
}  // namespace eoc
