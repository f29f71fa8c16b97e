#include "kube/tls_material.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

namespace eoc::kube {
namespace {

// OpenSSL objects, freed on scope exit.
using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;
using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;
using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

BioPtr MemoryBio(const std::string& pem) {
  return {BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free};
}

// The first certificate in `pem`, or null.
X509Ptr FirstCertificate(const std::string& pem) {
  const BioPtr bio = MemoryBio(pem);
  X509Ptr cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr, &X509_free);
  ERR_clear_error();
  return cert;
}

KeyPtr PrivateKey(const std::string& pem) {
  const BioPtr bio = MemoryBio(pem);
  KeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr,
             &EVP_PKEY_free);
  ERR_clear_error();
  return key;
}

}  // namespace

bool HasPemCertificate(const std::string& pem) { return FirstCertificate(pem) != nullptr; }

KeyPairCheck CheckKeyPair(const std::string& cert_pem, const std::string& key_pem) {
  const X509Ptr x509 = FirstCertificate(cert_pem);
  if (!x509) return KeyPairCheck::kNoCertificate;
  const KeyPtr pkey = PrivateKey(key_pem);
  if (!pkey) return KeyPairCheck::kNoPrivateKey;
  const bool match = X509_check_private_key(x509.get(), pkey.get()) == 1;
  ERR_clear_error();
  return match ? KeyPairCheck::kOk : KeyPairCheck::kMismatch;
}

}  // namespace eoc::kube
