// Internal to the server: a TLS listener's context, loaded from its files and loaded again when
// they change, and the identity in a client's certificate.
//
// A context is made whole from one reading of the three files (the certificate chain, its key,
// the client CAs), never from a mix of old and new: a new set serves the connections accepted
// after it loads, while those before keep the context they began with. What is compared between
// looks is a digest of the files' content, so a rewrite in place, a rename over the file and a
// Secret volume's swapped `..data` symlink are all seen, and an unchanged set is not loaded again.
#pragma once

#include <openssl/ssl.h>

#include <array>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "server/http.h"
#include "server/server.h"
#include "telemetry/logging.h"

namespace eoc::server::internal {

using TlsContext = boost::asio::ssl::context;

// The context new connections get. Not thread-safe: after Start() the server's accept thread
// alone uses it (accepts and the sweep, which polls).
class TlsContexts {
 public:
  // Loads the files; throws std::runtime_error naming the one that cannot be used (unreadable,
  // not PEM, a key that does not match the certificate). Its message holds no file content.
  TlsContexts(TlsFiles files, const telemetry::Logger& log);

  const std::shared_ptr<TlsContext>& current() const { return current_; }

  // At most once a check_interval: reads the files again and, when their content changed, loads
  // them; a set that does not load is logged (once while it stays the same) and the old context
  // kept.
  void Poll(std::chrono::steady_clock::time_point now);

 private:
  using Digest = std::array<unsigned char, 32>;  // SHA-256

  TlsFiles files_;
  const telemetry::Logger& log_;
  std::shared_ptr<TlsContext> current_;
  Digest tried_{};          // of the content last loaded or tried
  std::string last_error_;  // of the last failed look, logged once
  std::chrono::steady_clock::time_point next_check_;
};

enum class PeerRead : std::uint8_t {
  kNone,     // no verified client certificate
  kRead,     // `peer` holds its identity
  kRefused,  // one past PeerCertificate's bounds (http.h): its connection must be closed
};

// The verified client certificate of a connection whose handshake is done. Reads only the subject's
// common name and organizations, bounded as PeerCertificate says.
PeerRead ReadPeerCertificate(SSL* ssl, PeerCertificate& peer);

}  // namespace eoc::server::internal
