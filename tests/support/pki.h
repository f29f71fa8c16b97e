// Keys and certificates for tests, in a temporary folder, made by the openssl command at run
// time (and by the OpenSSL API where the command cannot: names past X.520's 64 characters).
//
//   eoc::testing::Pki pki;
//   pki.SelfSigned("ca", "/CN=test CA");
//   pki.Signed("alice", "/CN=alice/O=team-a", "ca");     // alice.crt, alice.key
//   server_options.tls = {.cert_file = pki.Cert("server"), .key_file = pki.Key("server"), ...};
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "child_process.h"
#include "files.h"

namespace eoc::testing {

class Pki {
 public:
  // A self-signed certificate (a CA, or a server's own) `name`.crt with its key `name`.key.
  void SelfSigned(const std::string& name, const std::string& subject) const {
    Run({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", Key(name), "-out", Cert(name), "-subj", subject, "-days", "2"});
  }
  // `name`.crt for `subject`, signed by the CA `ca`.
  void Signed(const std::string& name, const std::string& subject, const std::string& ca) const {
    const std::string request = dir_.Path(name + ".csr");
    Run({"req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", Key(name), "-out", request, "-subj", subject});
    Run({"x509", "-req", "-in", request, "-CA", Cert(ca), "-CAkey", Key(ca), "-CAcreateserial",
         "-out", Cert(name), "-days", "2"});
  }
  // `name`.crt with a common name of `length` bytes, signed by the CA `ca`: made here, since the
  // openssl command keeps names to X.520's 64 characters, which a certificate need not.
  void SignedWithLongName(const std::string& name, std::size_t length,
                          const std::string& ca) const {
    const auto ca_cert = Read<X509>(Cert(ca), &PEM_read_X509, &X509_free);
    const auto ca_key = Read<EVP_PKEY>(Key(ca), &PEM_read_PrivateKey, &EVP_PKEY_free);
    const std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"),
                                                                  &EVP_PKEY_free);
    const std::unique_ptr<X509, decltype(&X509_free)> cert(X509_new(), &X509_free);
    const std::string common_name(length, 'a');
    const bool made = key != nullptr && cert != nullptr && X509_set_version(cert.get(), 2) == 1 &&
                      ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 7) == 1 &&
                      X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60) != nullptr &&
                      X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400) != nullptr &&
                      X509_set_pubkey(cert.get(), key.get()) == 1 &&
                      X509_NAME_add_entry_by_NID(
                          X509_get_subject_name(cert.get()), NID_commonName, V_ASN1_UTF8STRING,
                          reinterpret_cast<const unsigned char*>(
                              common_name.data()),  // NOLINT(*-reinterpret-cast)
                          static_cast<int>(common_name.size()), -1, 0) == 1 &&
                      X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get())) == 1 &&
                      X509_sign(cert.get(), ca_key.get(), EVP_sha256()) > 0;
    if (!made) throw std::runtime_error("cannot make the certificate " + name);
    Write(Cert(name), [&](FILE* file) { return PEM_write_X509(file, cert.get()); });
    Write(Key(name), [&](FILE* file) {
      return PEM_write_PrivateKey(file, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
    });
  }
  std::string Cert(const std::string& name) const { return dir_.Path(name + ".crt"); }
  std::string Key(const std::string& name) const { return dir_.Path(name + ".key"); }
  std::string Path(const std::string& name) const { return dir_.Path(name); }

  // Puts `from`'s content at `to` by a rename, as an atomic rotation does.
  void Replace(const std::string& to, const std::string& from) const {
    const std::string staged = to + ".new";
    std::filesystem::copy_file(from, staged, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::rename(staged, to);
  }

 private:
  template <typename T, typename ReadPem, typename Free>
  static std::unique_ptr<T, Free> Read(const std::string& path, ReadPem read, Free free) {
    const std::unique_ptr<FILE, decltype(&fclose)> file(fopen(path.c_str(), "r"), &fclose);
    std::unique_ptr<T, Free> pem(file ? read(file.get(), nullptr, nullptr, nullptr) : nullptr,
                                 free);
    if (pem == nullptr) throw std::runtime_error("cannot read " + path);
    return pem;
  }
  static void Write(const std::string& path, const std::function<int(FILE*)>& write) {
    const std::unique_ptr<FILE, decltype(&fclose)> file(fopen(path.c_str(), "w"), &fclose);
    if (file == nullptr || write(file.get()) != 1) throw std::runtime_error("cannot write " + path);
  }

  void Run(std::vector<std::string> args) const {
    args.insert(args.begin(), "/usr/bin/openssl");
    const RunResult result = RunToExit(args);
    if (!result.ok) throw std::runtime_error("openssl failed: " + result.output);
  }

  TempDir dir_;
};

}  // namespace eoc::testing
