// Keys crafted against the public mix (common/mix64.h) that the tables once placed by: Mix64 of
// each is a multiple of 2^12 below 2^52, so by Mix64 they all fall in shard 0 (its top bits) and
// one slot of a small map (its low bits). Mix64 is a bijection with a known inverse, so anyone can
// make them; the tables must spread them anyway.
#pragma once

#include <cstdint>
#include <vector>

namespace eoc::routing::testing {

// The multiplicative inverse of an odd number modulo 2^64 (Newton's iteration).
constexpr std::uint64_t InverseOf(std::uint64_t odd) {
  std::uint64_t inverse = odd;
  for (int i = 0; i < 6; ++i) inverse *= 2 - odd * inverse;
  return inverse;
}

// x such that x ^ (x >> shift) == y.
constexpr std::uint64_t UnshiftXor(std::uint64_t y, unsigned shift) {
  std::uint64_t x = y;
  for (unsigned s = shift; s < 64; s += shift) x = y ^ (x >> shift);
  return x;
}

constexpr std::uint64_t InverseMix64(std::uint64_t z) {
  z = UnshiftXor(z, 31U) * InverseOf(0x94D049BB133111EBULL);
  z = UnshiftXor(z, 27U) * InverseOf(0xBF58476D1CE4E5B9ULL);
  return UnshiftXor(z, 30U);
}

inline std::vector<std::uint64_t> CollidingKeys(std::size_t count) {
  std::vector<std::uint64_t> keys;
  keys.reserve(count);
  for (std::uint64_t i = 1; keys.size() < count; ++i) keys.push_back(InverseMix64(i << 12U));
  return keys;
}

}  // namespace eoc::routing::testing
