// The server over TLS: certificates made by the openssl command at run time, a TLS client on
// OpenSSL (tls_client.h), and raw TCP clients for what a client should not do.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "files.h"
#include "pki.h"
#include "raw_client.h"
#include "server/handlers.h"
#include "server/pick_metrics.h"
#include "server/server.h"
#include "tls_client.h"

namespace eoc::server {
namespace {

using ::testing::HasSubstr;
using testing::Pki;
using testing::RawClient;
using testing::TlsClient;

constexpr std::string_view kGetWho = "GET /v1/who HTTP/1.1\r\nHost: t\r\n\r\n";
constexpr std::string_view kGetLater = "GET /v1/later HTTP/1.1\r\nHost: t\r\n\r\n";

// Waits (bounded) until `done`.
bool Await(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + RawClient::kPatience;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

class TlsServerTest : public ::testing::Test {
 protected:
  TlsServerTest() {
    pki_.SelfSigned("server-1", "/CN=server-1");
    pki_.SelfSigned("ca", "/CN=test-ca");
    pki_.Signed("alice", "/CN=alice/O=team-a/O=team-b", "ca");
    // What the server is given, copied so that a test can replace it.
    pki_.Replace(pki_.Path("tls.crt"), pki_.Cert("server-1"));
    pki_.Replace(pki_.Path("tls.key"), pki_.Key("server-1"));
  }

  TlsFiles Files(ClientCerts client_certs = ClientCerts::kNone) const {
    return {.cert_file = pki_.Path("tls.crt"),
            .key_file = pki_.Path("tls.key"),
            .client_ca_file = client_certs == ClientCerts::kNone ? "" : pki_.Cert("ca"),
            .client_certs = client_certs,
            .check_interval = std::chrono::milliseconds(20)};
  }

  void StartServer(ServerOptions options) {
    server_ = std::make_unique<HttpServer>(std::move(options));
    server_->Handle("GET", "/healthz", HealthzHandler());
    // Who the client is, by its certificate.
    server_->Handle("GET", "/v1/who", [](const Request& req, Response& resp) {
      const PeerCertificate* peer = req.peer_certificate();
      if (peer == nullptr) {
        resp.body() = "nobody";
        return;
      }
      resp.body() = "cn=" + peer->common_name + " o=";
      for (const std::string& organization : peer->organizations) {
        resp.body() += organization + ";";
      }
    });
    server_->Handle("GET", "/v1/later", [this](const Request& req, Response&) {
      const Later later = req.Defer();
      later.OnAbandon([this](Abandon) { ++abandoned_; });
      const std::lock_guard lock(mu_);
      later_.push_back(later);
    });
    server_->Start();
  }
  void StartTls(ClientCerts client_certs = ClientCerts::kNone) {
    StartServer({.tls = Files(client_certs)});
  }

  std::uint16_t port() const { return server_->port(); }

  // The body of GET /v1/who on a new TLS connection, or "" when it is not answered.
  std::string Who(const testing::TlsClientOptions& options = {}) const {
    TlsClient client(port(), options);
    if (!client.Handshake() || !client.Send(kGetWho)) return "";
    const auto response = client.ReadResponse();
    return response ? response->body : "";
  }
  // The server's certificate's name, as a new connection sees it.
  std::string ServerName() const {
    TlsClient client(port());
    return client.Handshake() ? client.ServerName() : "";
  }

  std::size_t Waiting() const {
    const std::lock_guard lock(mu_);
    return later_.size();
  }
  Later LaterAt(std::size_t i) const {
    const std::lock_guard lock(mu_);
    return later_.at(i);
  }

  Pki pki_;
  std::atomic<int> abandoned_{0};
  mutable std::mutex mu_;
  std::vector<Later> later_;            // guarded by mu_
  std::unique_ptr<HttpServer> server_;  // last: stopped before the state its handlers use goes
};

TEST_F(TlsServerTest, PlainHttpHasNoPeerCertificate) {
  StartServer({});
  RawClient client(port());
  ASSERT_TRUE(client.Send(kGetWho));
  const auto response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "nobody");
}

TEST_F(TlsServerTest, AnswersOverTlsWithKeepAliveAndPipelining) {
  StartTls();
  TlsClient client(port());
  ASSERT_TRUE(client.Handshake());
  EXPECT_EQ(client.Version(), "TLSv1.3");
  EXPECT_EQ(client.ServerName(), "server-1");
  ASSERT_TRUE(client.Send(kGetWho));
  auto response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "nobody") << "no client certificate was asked for";
  // Kept alive: a second request on the same connection, then two in one write.
  ASSERT_TRUE(client.Send("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_EQ(client.ReadResponse()->status, 200);
  ASSERT_TRUE(client.Send(std::string(kGetWho) + "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"));
  response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "nobody");
  response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "ok\n");
  EXPECT_EQ(server_->handshake_failures(), 0U);
}

TEST_F(TlsServerTest, ConnectionCloseIsAnsweredThenClosed) {
  StartTls();
  TlsClient client(port());
  ASSERT_TRUE(client.Handshake());
  ASSERT_TRUE(client.Send("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  const auto response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->header("connection"), "close");
  EXPECT_TRUE(client.WaitForClose());
  EXPECT_TRUE(client.ReceivedCloseNotify());
}

TEST_F(TlsServerTest, RequiredClientCertificatesRefuseAClientWithoutOneOrFromAnotherCa) {
  pki_.SelfSigned("other-ca", "/CN=other-ca");
  pki_.Signed("mallory", "/CN=alice/O=team-a", "other-ca");
  StartTls(ClientCerts::kRequire);
  EXPECT_EQ(Who(), "") << "no certificate";
  EXPECT_EQ(Who({.cert_file = pki_.Cert("mallory"), .key_file = pki_.Key("mallory")}), "")
      << "a certificate of another CA";
  EXPECT_EQ(Who({.cert_file = pki_.Cert("alice"), .key_file = pki_.Key("alice")}),
            "cn=alice o=team-a;team-b;");
  EXPECT_TRUE(Await([&] { return server_->handshake_failures() == 2; }))
      << server_->handshake_failures();
}

TEST_F(TlsServerTest, RequestedClientCertificatesAreOptionalButVerified) {
  pki_.SelfSigned("other-ca", "/CN=other-ca");
  pki_.Signed("mallory", "/CN=alice", "other-ca");
  StartTls(ClientCerts::kRequest);
  EXPECT_EQ(Who(), "nobody");
  EXPECT_EQ(Who({.cert_file = pki_.Cert("alice"), .key_file = pki_.Key("alice")}),
            "cn=alice o=team-a;team-b;");
  EXPECT_EQ(Who({.cert_file = pki_.Cert("mallory"), .key_file = pki_.Key("mallory")}), "");
}

TEST_F(TlsServerTest, ACertificatePastTheBoundsIsRefused) {
  std::string subject = "/CN=many";
  for (std::size_t i = 0; i <= PeerCertificate::kMaxOrganizations; ++i) {
    subject += "/O=o" + std::to_string(i);
  }
  pki_.Signed("many", subject, "ca");
  pki_.SignedWithLongName("long", PeerCertificate::kMaxNameBytes + 1, "ca");
  pki_.Signed("two-names", "/CN=alice/CN=bob", "ca");
  std::string at_bounds = "/CN=at";
  for (std::size_t i = 0; i < PeerCertificate::kMaxOrganizations; ++i) at_bounds += "/O=o";
  pki_.Signed("at-bounds", at_bounds, "ca");
  pki_.SignedWithLongName("long-at-bounds", PeerCertificate::kMaxNameBytes, "ca");
  StartTls(ClientCerts::kRequire);
  for (const std::string name : {"many", "long", "two-names"}) {
    EXPECT_EQ(Who({.cert_file = pki_.Cert(name), .key_file = pki_.Key(name)}), "") << name;
  }
  EXPECT_EQ(Who({.cert_file = pki_.Cert("at-bounds"), .key_file = pki_.Key("at-bounds")}),
            "cn=at o=o;o;o;o;o;o;o;o;o;o;o;o;o;o;o;o;");
  EXPECT_EQ(Who({.cert_file = pki_.Cert("long-at-bounds"), .key_file = pki_.Key("long-at-bounds")}),
            "cn=" + std::string(PeerCertificate::kMaxNameBytes, 'a') + " o=");
  EXPECT_TRUE(Await([&] { return server_->handshake_failures() == 3; }))
      << server_->handshake_failures();
}

TEST_F(TlsServerTest, NewFilesServeNewConnectionsAndOldConnectionsKeepTheirs) {
  pki_.SelfSigned("server-2", "/CN=server-2");
  StartTls();
  TlsClient before(port());
  ASSERT_TRUE(before.Handshake());
  EXPECT_EQ(before.ServerName(), "server-1");

  pki_.Replace(pki_.Path("tls.key"), pki_.Key("server-2"));
  pki_.Replace(pki_.Path("tls.crt"), pki_.Cert("server-2"));
  EXPECT_TRUE(Await([&] { return ServerName() == "server-2"; }));
  ASSERT_TRUE(before.Send(kGetWho));
  EXPECT_EQ(before.ReadResponse()->status, 200) << "a connection from before is still served";
}

TEST_F(TlsServerTest, FilesThatCannotBeUsedLeaveTheOldOnesInUse) {
  pki_.SelfSigned("server-2", "/CN=server-2");
  StartTls();
  // A key that is not the certificate's (half a rotation), then a certificate that is not PEM.
  pki_.Replace(pki_.Path("tls.key"), pki_.Key("server-2"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // ten checks
  EXPECT_EQ(ServerName(), "server-1");
  EXPECT_EQ(Who(), "nobody");
  pki_.Replace(pki_.Path("tls.crt"), pki_.Key("server-2"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(ServerName(), "server-1");
  // The rotation completes.
  pki_.Replace(pki_.Path("tls.crt"), pki_.Cert("server-2"));
  EXPECT_TRUE(Await([&] { return ServerName() == "server-2"; }));
}

TEST_F(TlsServerTest, StartFailsNamingTheFileThatCannotBeUsed) {
  pki_.SelfSigned("server-2", "/CN=server-2");
  TlsFiles missing = Files();
  missing.key_file = pki_.Path("missing.key");
  HttpServer without_key({.tls = missing});
  try {
    without_key.Start();
    ADD_FAILURE() << "started without its key";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("TLS key file " + missing.key_file));
  }
  TlsFiles mismatched = Files();
  mismatched.key_file = pki_.Key("server-2");
  HttpServer wrong_key({.tls = mismatched});
  try {
    wrong_key.Start();
    ADD_FAILURE() << "started with a key of another certificate";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("does not match the certificate"));
    EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("PRIVATE KEY")));
  }
  TlsFiles no_ca = Files();
  no_ca.client_certs = ClientCerts::kRequire;
  EXPECT_THROW(HttpServer({.tls = no_ca}), std::invalid_argument);
}

TEST_F(TlsServerTest, ASilentClientIsClosedAfterTheHeaderTimeoutAndCounted) {
  StartServer({.header_timeout = std::chrono::milliseconds(200), .tls = Files()});
  RawClient silent(port());
  EXPECT_TRUE(silent.WaitForClose());
  EXPECT_TRUE(Await([&] { return server_->handshake_failures() == 1; }));
}

TEST_F(TlsServerTest, PlainHttpInsteadOfAClientHelloIsClosedAndCounted) {
  StartTls();
  RawClient plain(port());
  ASSERT_TRUE(plain.Send("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_TRUE(plain.WaitForClose());
  EXPECT_TRUE(Await([&] { return server_->handshake_failures() == 1; }));
  EXPECT_EQ(Who(), "nobody") << "and the server goes on";
  const auto families = PickConnectionMetrics(*server_);  // as the pick listener exports it
  ASSERT_EQ(families.at(2).name, "eoc_pick_tls_handshake_failures_total");
  EXPECT_EQ(families.at(2).metric.at(0).counter.value, 1);
}

TEST_F(TlsServerTest, AtTheCapAConnectionStillInItsHandshakeGivesWay) {
  StartServer({.header_timeout = std::chrono::seconds(60), .max_connections = 2, .tls = Files()});
  RawClient first(port());
  ASSERT_TRUE(Await([&] { return server_->open_connections() == 1; }));
  TlsClient second(port());  // connected; its handshake not begun
  ASSERT_TRUE(Await([&] { return server_->open_connections() == 2; }));
  EXPECT_EQ(Who(), "nobody") << "the new connection is served";
  EXPECT_TRUE(first.WaitForClose()) << "the one in its handshake longest made room";
  EXPECT_EQ(server_->evicted_connections(), 1U);
  ASSERT_TRUE(second.Handshake()) << "the other is untouched";
  ASSERT_TRUE(second.Send(kGetWho));
  EXPECT_EQ(second.ReadResponse()->body, "nobody");
}

TEST_F(TlsServerTest, ADeferredRequestIsAnsweredAfterWhatArrivedBehindIt) {
  StartTls();
  TlsClient client(port());
  ASSERT_TRUE(client.Handshake());
  ASSERT_TRUE(client.Send(kGetLater));
  ASSERT_TRUE(Await([&] { return Waiting() == 1; }));
  ASSERT_TRUE(client.Send(kGetWho));  // read through TLS while the first waits
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(LaterAt(0).Answer([](Response& resp) { resp.body() = "first"; }));
  auto response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "first");
  response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "nobody");
  EXPECT_EQ(abandoned_, 0);

  // A client that goes away while its request waits abandons it.
  {
    TlsClient leaving(port());
    ASSERT_TRUE(leaving.Handshake());
    ASSERT_TRUE(leaving.Send(kGetLater));
    ASSERT_TRUE(Await([&] { return Waiting() == 2; }));
  }
  EXPECT_TRUE(Await([&] { return abandoned_ == 1; }));
}

}  // namespace
}  // namespace eoc::server
