#include "common/keyed_hash.h"

#include <sodium.h>

#include <cstring>
#include <stdexcept>

namespace eoc {

static_assert(KeyedHash::kKeyBytes == crypto_shorthash_KEYBYTES);
static_assert(crypto_shorthash_BYTES == sizeof(std::uint64_t));

const KeyedHash& KeyedHash::ForProcess() {
  static const KeyedHash hash = [] {
    if (sodium_init() < 0) throw std::runtime_error("libsodium could not be initialised");
    Key key{};
    randombytes_buf(key.data(), key.size());
    return KeyedHash(key);
  }();
  return hash;
}

std::uint64_t KeyedHash::operator()(std::string_view bytes) const {
  unsigned char out[crypto_shorthash_BYTES];
  crypto_shorthash(out, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                   key_.data());
  std::uint64_t value = 0;
  std::memcpy(&value, out, sizeof(value));
  return value;
}

std::uint64_t KeyedHash::operator()(std::uint64_t value) const {
  unsigned char in[sizeof(value)];
  std::memcpy(in, &value, sizeof(value));
  return (*this)(std::string_view(reinterpret_cast<const char*>(in), sizeof(in)));
}

}  // namespace eoc
