#include "server/tls.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace eoc::server::internal {
namespace {

namespace net = boost::asio;

// A PEM file larger than this is not a certificate chain or a key.
constexpr std::streamoff kMaxFileBytes = std::streamoff{1024} * 1024;
// Mozilla's "intermediate" configuration (TLS 1.2's ciphers; TLS 1.3 keeps OpenSSL's suites,
// which are the same as Mozilla's): forward secrecy and AEAD only.
constexpr const char* kCiphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
    "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305";
constexpr std::string_view kSessionContext = "eoc-http-server";

// The three files' content, as read once; the key's bytes are wiped when it goes.
struct FileSet {
  std::string cert;
  std::string key;
  std::string client_ca;

  FileSet() = default;
  ~FileSet() { OPENSSL_cleanse(key.data(), key.size()); }
  FileSet(const FileSet&) = delete;
  FileSet& operator=(const FileSet&) = delete;
  FileSet(FileSet&&) = delete;
  FileSet& operator=(FileSet&&) = delete;
};

// Encrypted keys are not supported: without this, OpenSSL would ask for a password on the terminal.
int NoPassword(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*userdata*/) { return 0; }

// Reads `path` whole into `into`; throws naming it (`what` says which file it is).
void ReadFile(std::string_view what, const std::string& path, std::string& into) {
  const std::string name = "TLS " + std::string(what) + " file " + path;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error(name + ": cannot be read");
  const std::streamoff size = in.tellg();
  if (size < 0) throw std::runtime_error(name + ": cannot be read");
  if (size > kMaxFileBytes) {
    throw std::runtime_error(name + ": over " + std::to_string(kMaxFileBytes) + " bytes");
  }
  into.resize(static_cast<std::size_t>(size));
  in.seekg(0);
  in.read(into.data(), size);
  if (in.gcount() != size) throw std::runtime_error(name + ": changed while it was read");
}

void ReadFiles(const TlsFiles& files, FileSet& set) {
  ReadFile("certificate", files.cert_file, set.cert);
  ReadFile("key", files.key_file, set.key);
  if (!files.client_ca_file.empty()) ReadFile("client CA", files.client_ca_file, set.client_ca);
}

std::array<unsigned char, 32> DigestOf(const FileSet& set) {
  std::array<unsigned char, 32> digest{};
  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md(EVP_MD_CTX_new(),
                                                                   &EVP_MD_CTX_free);
  bool ok = md != nullptr && EVP_DigestInit_ex(md.get(), EVP_sha256(), nullptr) == 1;
  for (const std::string* part : {&set.cert, &set.key, &set.client_ca}) {
    const std::uint64_t size = part->size();  // so that no two sets run together alike
    ok = ok && EVP_DigestUpdate(md.get(), &size, sizeof(size)) == 1 &&
         EVP_DigestUpdate(md.get(), part->data(), part->size()) == 1;
  }
  unsigned int length = 0;
  ok = ok && EVP_DigestFinal_ex(md.get(), digest.data(), &length) == 1;
  if (!ok || length != digest.size()) throw std::runtime_error("TLS files: SHA-256 failed");
  return digest;
}

// What OpenSSL says went wrong last, as its error string (no file content in it).
std::string OpenSslReason() {
  const unsigned long code = ERR_peek_last_error();  // NOLINT(google-runtime-int): its type
  ERR_clear_error();
  const char* reason = ERR_reason_error_string(code);
  return reason != nullptr ? reason : "not valid PEM";
}

void LoadClientCas(const TlsFiles& files, const std::string& pem, SSL_CTX* ctx) {
  const std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  int count = 0;
  while (bio != nullptr) {
    const std::unique_ptr<X509, decltype(&X509_free)> cert(
        PEM_read_bio_X509(bio.get(), nullptr, &NoPassword, nullptr), &X509_free);
    if (cert == nullptr) break;
    if (X509_STORE_add_cert(store, cert.get()) != 1 ||
        SSL_CTX_add_client_CA(ctx, cert.get()) != 1) {
      throw std::runtime_error("TLS client CA file " + files.client_ca_file + ": " +
                               OpenSslReason());
    }
    ++count;
  }
  ERR_clear_error();  // the end of the PEM
  if (count == 0) {
    throw std::runtime_error("TLS client CA file " + files.client_ca_file +
                             ": holds no PEM certificate");
  }
}

int VerifyMode(ClientCerts client_certs) {
  switch (client_certs) {
    case ClientCerts::kNone:
      return SSL_VERIFY_NONE;
    case ClientCerts::kRequest:
      return SSL_VERIFY_PEER;
    case ClientCerts::kRequire:
      return SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  }
  return SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
}

// A server context from one reading of the files; throws naming the file that cannot be used.
std::shared_ptr<TlsContext> Build(const TlsFiles& files, const FileSet& set) {
  auto context = std::make_shared<TlsContext>(TlsContext::tls_server);
  SSL_CTX* ctx = context->native_handle();
  SSL_CTX_set_default_passwd_cb(ctx, &NoPassword);
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(ctx, kCiphers) != 1 || SSL_CTX_set_dh_auto(ctx, 1) != 1 ||
      SSL_CTX_set_session_id_context(
          ctx,
          reinterpret_cast<const unsigned char*>(  // NOLINT(*-reinterpret-cast): its type
              kSessionContext.data()),
          static_cast<unsigned int>(kSessionContext.size())) != 1) {
    throw std::runtime_error("TLS: cannot set up a context: " + OpenSslReason());
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  // An idle connection gives its read and write buffers back until it has bytes again.
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  // The key first: the certificate then drops a key that is not its own, which the check says.
  boost::system::error_code ec;
  context->use_private_key(net::buffer(set.key), TlsContext::pem, ec);
  if (ec) {
    ERR_clear_error();
    throw std::runtime_error("TLS key file " + files.key_file + ": " + ec.message());
  }
  context->use_certificate_chain(net::buffer(set.cert), ec);
  if (ec) {
    ERR_clear_error();
    throw std::runtime_error("TLS certificate file " + files.cert_file + ": " + ec.message());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    throw std::runtime_error("TLS key file " + files.key_file +
                             " does not match the certificate in " + files.cert_file);
  }
  if (files.client_certs != ClientCerts::kNone) LoadClientCas(files, set.client_ca, ctx);
  SSL_CTX_set_verify(ctx, VerifyMode(files.client_certs), nullptr);
  return context;
}

// A name of the subject as UTF-8 within PeerCertificate's bounds, or false.
bool NameWithinBounds(const ASN1_STRING* data, std::string& into) {
  // No conversion of what cannot fit: a character is at most 4 bytes of any ASN.1 string type.
  if (ASN1_STRING_length(data) > static_cast<int>(4 * PeerCertificate::kMaxNameBytes)) return false;
  unsigned char* utf8 = nullptr;
  const int n = ASN1_STRING_to_UTF8(&utf8, data);
  if (n < 0) {
    ERR_clear_error();
    return false;
  }
  const std::unique_ptr<unsigned char, void (*)(unsigned char*)> owned(
      utf8, [](unsigned char* p) { OPENSSL_free(p); });
  if (static_cast<std::size_t>(n) > PeerCertificate::kMaxNameBytes) return false;
  const std::string_view text(reinterpret_cast<const char*>(utf8),  // NOLINT(*-reinterpret-cast)
                              static_cast<std::size_t>(n));
  if (std::any_of(text.begin(), text.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return byte < 0x20 || byte == 0x7f;
      })) {
    return false;
  }
  into.assign(text);
  return true;
}

}  // namespace

TlsContexts::TlsContexts(TlsFiles files, const telemetry::Logger& log)
    : files_(std::move(files)), log_(log) {
  FileSet set;
  ReadFiles(files_, set);
  tried_ = DigestOf(set);
  current_ = Build(files_, set);
  next_check_ = std::chrono::steady_clock::now() + files_.check_interval;
}

void TlsContexts::Poll(std::chrono::steady_clock::time_point now) {
  if (now < next_check_) return;
  next_check_ = now + files_.check_interval;
  try {
    FileSet set;
    ReadFiles(files_, set);
    const Digest digest = DigestOf(set);
    if (digest == tried_) return;
    tried_ = digest;
    current_ = Build(files_, set);
    last_error_.clear();
    log_.Info("TLS files loaded again: new connections use them",
              {{"cert_file", files_.cert_file}});
  } catch (const std::exception& e) {
    if (e.what() == last_error_) return;
    last_error_ = e.what();
    log_.Error("TLS files changed but cannot be used: connections keep the ones loaded before",
               {{"error", last_error_}});
  }
}

PeerRead ReadPeerCertificate(SSL* ssl, PeerCertificate& peer) {
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return PeerRead::kNone;
  const X509_NAME* subject = X509_get_subject_name(cert);
  bool common_name = false;
  for (int i = 0, n = X509_NAME_entry_count(subject); i < n; ++i) {
    const X509_NAME_ENTRY* entry = X509_NAME_get_entry(subject, i);
    const int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry));
    if (nid != NID_commonName && nid != NID_organizationName) continue;
    std::string value;
    if (!NameWithinBounds(X509_NAME_ENTRY_get_data(entry), value)) return PeerRead::kRefused;
    if (nid == NID_commonName) {
      if (common_name) return PeerRead::kRefused;  // which one would it be?
      common_name = true;
      peer.common_name = std::move(value);
    } else {
      if (peer.organizations.size() == PeerCertificate::kMaxOrganizations) {
        return PeerRead::kRefused;
      }
      peer.organizations.push_back(std::move(value));
    }
  }
  return PeerRead::kRead;
}

}  // namespace eoc::server::internal
