// Checks of TLS material given in PEM (a cluster CA, a client certificate and its key), so that
// configuration errors name the field instead of surfacing as an obscure TLS handshake failure.
// Failures leave nothing in OpenSSL's per-thread error queue, where they would confuse the next
// TLS user on the thread.
#pragma once

#include <cstddef>
#include <string>

namespace eoc::kube {

// The most read from a PEM file: a public CA bundle is about 250 KiB.
inline constexpr std::size_t kMaxPemFileBytes = std::size_t{4} << 20;

// True when `pem` holds at least one PEM certificate.
bool HasPemCertificate(const std::string& pem);

enum class KeyPairCheck { kOk, kNoCertificate, kNoPrivateKey, kMismatch };
// Whether `key_pem` holds a PEM private key that belongs to the first certificate of `cert_pem`.
KeyPairCheck CheckKeyPair(const std::string& cert_pem, const std::string& key_pem);

}  // namespace eoc::kube
