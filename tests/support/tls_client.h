// RawClient over TLS, with OpenSSL on the same socket: a handshake the test starts (and can see
// fail), optionally with a client certificate, then requests and responses as RawClient has them.
// The server's certificate is not verified (tests of servers look at it instead: ServerName). Every
// wait is bounded as RawClient's are (the handshake's by socket timeouts).
//
//   eoc::testing::TlsClient client(port, {.cert_file = "alice.crt", .key_file = "alice.key"});
//   ASSERT_TRUE(client.Handshake());
//   client.Send("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
//   auto response = client.ReadResponse();
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <array>
#include <csignal>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "raw_client.h"

namespace eoc::testing {

struct TlsClientOptions {
  std::string cert_file;  // with key_file: the client certificate shown, if the server asks
  std::string key_file;
};

class TlsClient : public RawClient {
 public:
  explicit TlsClient(std::uint16_t port, const TlsClientOptions& options = {})
      : RawClient(port), context_(SSL_CTX_new(TLS_client_method()), &SSL_CTX_free) {
    if (context_ == nullptr) throw std::runtime_error("SSL_CTX_new failed");
    // OpenSSL writes with write(2): a server that has closed would kill the test with SIGPIPE
    // (RawClient sends with MSG_NOSIGNAL instead).
    signal(SIGPIPE, SIG_IGN);
    if (!options.cert_file.empty() &&
        (SSL_CTX_use_certificate_chain_file(context_.get(), options.cert_file.c_str()) != 1 ||
         SSL_CTX_use_PrivateKey_file(context_.get(), options.key_file.c_str(), SSL_FILETYPE_PEM) !=
             1)) {
      throw std::runtime_error("client certificate " + options.cert_file + " cannot be loaded");
    }
    ssl_.reset(SSL_new(context_.get()));
    if (ssl_ == nullptr || SSL_set_fd(ssl_.get(), fd()) != 1) {
      throw std::runtime_error("SSL_new failed");
    }
    // Blocking OpenSSL calls (the handshake, a read of a record's rest) end within kPatience.
    timeval patience{.tv_sec = kPatience.count() / 1000, .tv_usec = 0};
    setsockopt(fd(), SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof(patience));
    setsockopt(fd(), SOL_SOCKET, SO_SNDTIMEO, &patience, sizeof(patience));
  }

  // True when the handshake completes. Under TLS 1.3 a server that refuses the client's
  // certificate says so after the client's side is done: the connection then closes unanswered.
  bool Handshake() {
    const bool ok = SSL_connect(ssl_.get()) == 1;
    ERR_clear_error();
    return ok;
  }

  // The common name of the server's certificate ("" without one).
  std::string ServerName() const {
    X509* cert = SSL_get0_peer_certificate(ssl_.get());
    if (cert == nullptr) return "";
    std::array<char, 256> name{};
    X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, name.data(),
                              static_cast<int>(name.size()));
    return name.data();
  }

  // Whether the server ended TLS with close_notify (not just a close of the socket).
  bool ReceivedCloseNotify() const {
    return (SSL_get_shutdown(ssl_.get()) & SSL_RECEIVED_SHUTDOWN) != 0;
  }

  // The protocol agreed ("TLSv1.3").
  std::string Version() const { return SSL_get_version(ssl_.get()); }

 protected:
  ssize_t WriteSome(std::string_view bytes) const override {
    const int n = SSL_write(ssl_.get(), bytes.data(), static_cast<int>(bytes.size()));
    ERR_clear_error();
    return n;
  }
  bool HasBuffered() const override { return SSL_pending(ssl_.get()) > 0; }
  std::optional<std::size_t> ReadSomeInto(std::span<char> into) override {
    const int n = SSL_read(ssl_.get(), into.data(), static_cast<int>(into.size()));
    if (n > 0) return static_cast<std::size_t>(n);
    const int error = SSL_get_error(ssl_.get(), n);
    ERR_clear_error();
    // A record with no data for the caller (a session ticket): nothing yet.
    if (error == SSL_ERROR_WANT_READ) return 0;
    return std::nullopt;  // close_notify, a close, an alert, or the patience's end
  }

 private:
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> context_;
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl_{nullptr, &SSL_free};
};

}  // namespace eoc::testing
