#include "server/server.h"

#include <fcntl.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "server/address.h"
#include "server/connection.h"
#include "server/tls.h"

namespace eoc::server {
namespace {

namespace net = boost::asio;
using net::ip::tcp;

// After a failed accept (out of file descriptors, most likely), wait this long before the next
// one rather than spin.
constexpr std::chrono::milliseconds kAcceptRetry(100);
// How often Stop() looks whether the connections have drained.
constexpr std::chrono::milliseconds kDrainPoll(5);

ServerOptions Validated(ServerOptions options) {
  if (options.threads < 1) throw std::invalid_argument("server threads must be at least 1");
  if (options.max_connections < 1) {
    throw std::invalid_argument("server max_connections must be at least 1");
  }
  if (options.max_header_bytes < 1 ||
      options.max_header_bytes > std::numeric_limits<std::uint32_t>::max()) {
    throw std::invalid_argument("server max_header_bytes must be from 1 to 2^32-1");
  }
  if (options.max_body_bytes_in_flight < options.max_body_bytes) {
    throw std::invalid_argument(
        "server max_body_bytes_in_flight (" + std::to_string(options.max_body_bytes_in_flight) +
        ") must be at least max_body_bytes (" + std::to_string(options.max_body_bytes) + ")");
  }
  if (options.tls) {
    const TlsFiles& tls = *options.tls;
    if (tls.cert_file.empty() || tls.key_file.empty()) {
      throw std::invalid_argument("server TLS needs a certificate file and a key file");
    }
    if ((tls.client_certs == ClientCerts::kNone) != tls.client_ca_file.empty()) {
      throw std::invalid_argument(
          "server TLS: a client CA file goes with client certificates requested or required, and "
          "only with them");
    }
    if (tls.check_interval.count() <= 0) {
      throw std::invalid_argument("server TLS check_interval must be positive");
    }
  }
  for (const auto timeout : {options.header_timeout, options.idle_timeout, options.body_timeout,
                             options.write_timeout, options.drain_timeout}) {
    if (timeout.count() <= 0) throw std::invalid_argument("server timeouts must be positive");
  }
  return options;
}

// Asio opens sockets without close-on-exec; the operator runs child processes (exec credential
// plugins), which must not inherit the listener or client connections and keep them open.
template <typename Socket>
void SetCloseOnExec(Socket& socket) {
  const int fd = socket.native_handle();
  const int flags = fcntl(fd, F_GETFD);
  if (flags >= 0) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

tcp::endpoint ToEndpoint(const std::string& address) {
  const HostPort host_port = ParseHostPort(address);
  if (host_port.host.empty()) return {net::ip::address_v4::any(), host_port.port};
  if (host_port.host == "localhost") return {net::ip::address_v4::loopback(), host_port.port};
  boost::system::error_code ec;
  const auto ip = net::ip::make_address(host_port.host, ec);
  if (ec) {
    throw std::invalid_argument("listen address \"" + address + "\": host \"" + host_port.host +
                                "\" is not an IP address or localhost");
  }
  return {ip, host_port.port};
}

// One io_context a thread, each run by its thread alone (concurrency hint 1): a connection lives on
// one of them, so its handlers never run concurrently and need no strand.
std::vector<std::unique_ptr<net::io_context>> MakeContexts(int threads) {
  std::vector<std::unique_ptr<net::io_context>> contexts;
  contexts.reserve(static_cast<std::size_t>(threads));
  for (int i = 0; i < threads; ++i) contexts.push_back(std::make_unique<net::io_context>(1));
  return contexts;
}

// How often the sweep looks for connections past their deadline: a quarter of the shortest
// timeout, within 10 to 100 ms (a lingering close lasts 500 ms).
std::chrono::milliseconds SweepPeriod(const ServerOptions& o) {
  const auto shortest =
      std::min({o.header_timeout, o.idle_timeout, o.body_timeout, o.write_timeout});
  return std::clamp<std::chrono::milliseconds>(shortest / 4, std::chrono::milliseconds(10),
                                               std::chrono::milliseconds(100));
}

}  // namespace

class HttpServer::Impl {
 public:
  explicit Impl(ServerOptions options)
      : core(Validated(std::move(options))),
        endpoint(ToEndpoint(core.options.address)),
        contexts(MakeContexts(core.options.threads)),
        sweep_period(SweepPeriod(core.options)) {}

  // Call with acceptor_mu held. Accepted connections go to the threads' contexts in turn.
  void Accept() {
    net::io_context& target = *contexts[next_context++ % contexts.size()];
    acceptor.async_accept(target.get_executor(),
                          [this](boost::system::error_code ec, tcp::socket socket) {
                            OnAccept(ec, std::move(socket));
                          });
  }

  void OnAccept(boost::system::error_code ec, tcp::socket socket) {
    if (!ec) Admit(std::move(socket));
    const std::lock_guard lock(acceptor_mu);
    if (!acceptor.is_open()) return;  // Stop() closed it: accept no more
    if (ec) {
      core.log.Warn("accept failed", {{"error", ec.message()}});
      retry.expires_after(kAcceptRetry);
      retry.async_wait([this](boost::system::error_code wait_ec) {
        const std::lock_guard retry_lock(acceptor_mu);
        if (!wait_ec && acceptor.is_open()) Accept();
      });
      return;
    }
    Accept();
  }

  // Call with acceptor_mu held.
  void Sweep() {
    sweep.expires_after(sweep_period);
    sweep.async_wait([this](boost::system::error_code ec) {
      if (ec) return;
      core.Sweep();
      if (tls) tls->Poll(std::chrono::steady_clock::now());
      const std::lock_guard lock(acceptor_mu);
      if (sweeping) Sweep();
    });
  }

  void Admit(tcp::socket socket) {
    SetCloseOnExec(socket);
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);  // answers are one write: send it at once
    std::shared_ptr<internal::Connection> connection;
    if (tls) {
      connection =
          std::make_shared<internal::TlsConnection>(std::move(socket), core, tls->current());
    } else {
      connection = std::make_shared<internal::PlainConnection>(std::move(socket), core, nullptr);
    }
    switch (core.Register(connection)) {
      case internal::ServerCore::Admission::kAdmitted:
        connection->Start();
        break;
      case internal::ServerCore::Admission::kFull:
        // Closed as `connection` goes out of scope. Debug only: a flood would flood the log too.
        core.log.Debug("connection refused: max_connections are open and busy",
                       {{"max_connections", core.options.max_connections}});
        break;
      case internal::ServerCore::Admission::kStopping:
        break;
    }
  }

  void Run(net::io_context& io) {
    // A handler that escapes the connection's own error handling is a bug; keep serving the other
    // connections rather than lose the thread.
    for (;;) {
      try {
        io.run();
        return;
      } catch (const std::exception& e) {
        core.log.Error("unexpected exception on an I/O thread", {{"error", e.what()}});
      }
    }
  }

  internal::ServerCore core;
  const tcp::endpoint endpoint;
  std::vector<std::unique_ptr<net::io_context>> contexts;  // one a thread: the connections'
  // Accepts and sweeps on a thread of their own, so that a handler that blocks its thread (which
  // it must not) holds up only the connections of that thread, never new ones.
  net::io_context accept_context{1};
  // Keep each thread's run() going while it has no connection.
  std::vector<net::executor_work_guard<net::io_context::executor_type>> guards;
  const std::chrono::milliseconds sweep_period;
  // Accepts are chained (one at a time), so only Stop() can touch the acceptor concurrently: a
  // mutex is enough, and lets Stop() close it synchronously. The sweep's timer is guarded alike.
  std::mutex acceptor_mu;
  tcp::acceptor acceptor{accept_context};   // guarded by acceptor_mu once the threads run
  net::steady_timer retry{accept_context};  // guarded by acceptor_mu
  net::steady_timer sweep{accept_context};  // guarded by acceptor_mu
  bool sweeping = false;                    // guarded by acceptor_mu
  std::size_t next_context = 0;             // guarded by acceptor_mu
  // The TLS files' context, made at Start(); then used on the accept thread alone.
  std::optional<internal::TlsContexts> tls;
  std::vector<std::thread> threads;
  std::uint16_t port = 0;
  bool started = false;
  std::mutex stop_mu;  // one Stop() at a time; a second waits for the first to finish
};

HttpServer::HttpServer(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(std::string_view method, std::string_view path, Handler handler,
                        BodyUse body) {
  if (impl_->started) throw std::logic_error("HttpServer::Handle after Start");
  impl_->core.paths.Add(method, path, std::move(handler), body);
}

void HttpServer::Start() {
  Impl& s = *impl_;
  if (s.started) throw std::logic_error("HttpServer::Start called twice");
  if (s.core.options.tls) s.tls.emplace(*s.core.options.tls, s.core.log);  // throws naming a file
  const std::string where = "listen on " + s.core.options.address;
  boost::system::error_code ec;
  s.acceptor.open(s.endpoint.protocol(), ec);
  if (!ec) SetCloseOnExec(s.acceptor);
  if (!ec) s.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(s.endpoint, ec);
  if (!ec) s.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    boost::system::error_code ignored;
    s.acceptor.close(ignored);
    throw std::runtime_error(where + ": " + ec.message());
  }
  s.port = s.acceptor.local_endpoint().port();
  s.started = true;
  {
    const std::lock_guard lock(s.acceptor_mu);
    s.Accept();
    s.sweeping = true;
    s.Sweep();
  }
  for (const auto& context : s.contexts) {
    s.guards.push_back(net::make_work_guard(*context));
    s.threads.emplace_back([&s, &io = *context] { s.Run(io); });
  }
  s.threads.emplace_back([&s] { s.Run(s.accept_context); });
  s.core.log.Info("listening", {{"address", s.core.options.address},
                                {"port", s.port},
                                {"threads", s.core.options.threads},
                                {"tls", s.tls.has_value()}});
}

std::uint16_t HttpServer::port() const { return impl_->port; }

std::size_t HttpServer::open_connections() const { return impl_->core.open_connections(); }

std::uint64_t HttpServer::evicted_connections() const { return impl_->core.evicted(); }

std::uint64_t HttpServer::handshake_failures() const { return impl_->core.handshake_failures(); }

std::uint64_t HttpServer::shed_requests() const { return impl_->core.bodies.shed(); }

std::size_t HttpServer::body_bytes_in_flight() const { return impl_->core.bodies.used(); }

void HttpServer::Stop() {
  Impl& s = *impl_;
  const std::lock_guard lock(s.stop_mu);
  if (!s.started || s.threads.empty()) return;
  s.core.BeginStop();  // from here on, whatever is still accepted is closed at once
  {
    const std::lock_guard acceptor_lock(s.acceptor_mu);
    boost::system::error_code ignored;
    s.acceptor.close(ignored);
    s.retry.cancel();
  }
  const auto deadline = std::chrono::steady_clock::now() + s.core.options.drain_timeout;
  while (s.core.open_connections() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kDrainPoll);
  }
  s.core.CloseAll();
  {
    const std::lock_guard sweep_lock(s.acceptor_mu);
    s.sweeping = false;
    s.sweep.cancel();
  }
  s.guards.clear();
  // The threads return once the closed connections have finished and nothing is left to run.
  for (auto& thread : s.threads) thread.join();
  s.threads.clear();
  s.core.log.Info("stopped", {{"port", s.port}});
}

}  // namespace eoc::server
