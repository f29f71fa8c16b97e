#include "common/keyed_hash.h"

#include <sodium.h>

#include <array>
#include <stdexcept>

namespace eoc {

const KeyedHash& KeyedHash::ForProcess() {
  static const KeyedHash hash = [] {
    if (sodium_init() < 0) throw std::runtime_error("libsodium could not be initialised");
    std::array<std::uint64_t, 2> key{};
    randombytes_buf(key.data(), sizeof(key));
    return KeyedHash(key[0], key[1]);
  }();
  return hash;
}

}  // namespace eoc
