#include "controller/scrape/direct_fetcher.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/text.h"
#include "common/url.h"

namespace eoc::controller {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using ErrorCode = boost::system::error_code;

// Beast reads up to this much at a time; the read buffer holds the headers and one such read.
constexpr std::size_t kReadSize = std::size_t{64} << 10;

FetchResult Failure(FetchErrorKind kind, std::string message, std::size_t bytes_read = 0) {
  FetchResult r;
  r.error = FetchError{kind, 0, std::move(message)};
  r.bytes_read = bytes_read;
  return r;
}

std::string Describe(const FetchRequest& r) {
  std::string what = "GET " + r.address + r.path;
  if (!r.pod.empty()) what += " (pod " + r.pod + ")";
  return what;
}

// An IP literal and a port: pods are reached by IP, so nothing is looked up.
std::optional<tcp::endpoint> ParseEndpoint(const std::string& address, std::string* error) {
  const auto hp = SplitHostPort(address, error);
  if (!hp) return std::nullopt;
  if (!hp->port || *hp->port == 0) {
    *error = "no port";
    return std::nullopt;
  }
  ErrorCode ec;
  const auto ip = net::ip::make_address(std::string(hp->host), ec);
  if (ec) {
    *error = "the host is not an IP address";
    return std::nullopt;
  }
  return tcp::endpoint(ip, *hp->port);
}

}  // namespace

class DirectFetcher::Impl {
 public:
  explicit Impl(DirectFetcherOptions options);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  Impl(Impl&&) = delete;
  Impl& operator=(Impl&&) = delete;

  void Fetch(FetchRequest request, Callback done);
  std::size_t in_flight() const;
  std::size_t queued() const;

  class Session;
  // A session's end: frees its slot, starts the next queued fetch, then calls back.
  void Done(Session* session, FetchResult result, const Callback& done);

 private:
  struct Pending {
    FetchRequest request;
    Callback done;
  };
  std::shared_ptr<Session> Admit(Pending pending);  // under mu_

  const DirectFetcherOptions options_;
  net::io_context io_;
  net::executor_work_guard<net::io_context::executor_type> work_;
  std::vector<std::thread> threads_;
  mutable std::mutex mu_;
  bool stopping_ = false;                                          // guarded by mu_
  std::deque<Pending> queue_;                                      // guarded by mu_
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions_;  // guarded by mu_
};

// One fetch: connect, send the GET, read the answer, close. Everything runs on its own strand.
class DirectFetcher::Impl::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Impl& impl, FetchRequest request, Callback done)
      : impl_(impl),
        request_(std::move(request)),
        done_(std::move(done)),
        stream_(net::make_strand(impl.io_)),
        buffer_(impl.options_.header_limit + kReadSize) {}

  void Start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Connect(); });
  }
  // From any thread: ends the fetch with kCancelled (if it has not ended already).
  void Cancel() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      self->cancelled_ = true;
      self->stream_.cancel();
    });
  }

 private:
  void Connect() {
    if (cancelled_) return Fail(net::error::operation_aborted);
    std::string error;
    const auto endpoint = ParseEndpoint(request_.address, &error);
    if (!endpoint) {
      return Finish(
          Failure(FetchErrorKind::kTransport,
                  Describe(request_) + ": bad address " + Quoted(request_.address) + ": " + error));
    }
    request_line_ = {http::verb::get, request_.path, 11};
    request_line_.set(http::field::host, request_.host.empty() ? request_.address : request_.host);
    request_line_.set(http::field::accept, kPrometheusTextAccept);
    request_line_.set(http::field::user_agent, impl_.options_.user_agent);
    request_line_.set(http::field::connection, "close");
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(impl_.options_.header_limit));
    parser_->body_limit(impl_.options_.body_limit);
    // One deadline for all that follows: the stream's expiry is a time, not a per-read timeout.
    stream_.expires_after(request_.timeout);
    stage_ = "connecting";
    // Each step checks cancelled_ as well as its error: a Cancel that ran on the strand after an
    // operation completed but before its handler finds nothing to cancel, and the next operation
    // would otherwise run to its deadline.
    stream_.async_connect(*endpoint, [self = shared_from_this()](const ErrorCode& ec) {
      if (ec || self->cancelled_) return self->Fail(ec);
      self->stage_ = "sending the request";
      http::async_write(self->stream_, self->request_line_,
                        [self](const ErrorCode& wec, std::size_t /*bytes*/) {
                          if (wec || self->cancelled_) return self->Fail(wec);
                          self->Read();
                        });
    });
  }

  // The headers first, then the body. Beast 1.74's parser checks a Content-Length against the body
  // limit when the headers end, but if the same read brought body bytes too, an eager parse (as
  // http::async_read makes it) drops that error and reads on (basic_parser::put goes on to the body
  // after finish_header failed). Reading the headers alone stops there; the length is checked here.
  void Read() {
    stage_ = "reading the answer";
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](const ErrorCode& ec, std::size_t bytes) {
                              self->bytes_read_ = bytes;
                              if (ec || self->cancelled_) return self->Fail(ec);
                              const auto length = self->parser_->content_length();
                              if (length && *length > self->impl_.options_.body_limit) {
                                return self->Fail(http::error::body_limit);
                              }
                              if (self->parser_->is_done()) return self->Answered();
                              http::async_read(
                                  self->stream_, self->buffer_, *self->parser_,
                                  [self](const ErrorCode& bec, std::size_t body_bytes) {
                                    self->bytes_read_ += body_bytes;
                                    if (bec) return self->Fail(bec);
                                    self->Answered();
                                  });
                            });
  }

  void Answered() {
    auto& response = parser_->get();
    const int status = static_cast<int>(response.result_int());
    FetchResult r;
    r.bytes_read = bytes_read_;
    if (status / 100 == 2) {
      r.body = std::move(response.body());
    } else {
      r.error = FetchError{
          FetchErrorKind::kHttpStatus, status,
          Describe(request_) + ": HTTP " + std::to_string(status) + " " + Quoted(response.body())};
    }
    Finish(std::move(r));
  }

  void Fail(const ErrorCode& ec) {
    const std::string what = Describe(request_);
    const std::string read = " (" + std::to_string(bytes_read_) + " bytes read)";
    const auto& o = impl_.options_;
    if (cancelled_) {
      return Finish(Failure(FetchErrorKind::kCancelled, what + ": the fetcher stopped"));
    }
    if (ec == beast::error::timeout) {
      return Finish(Failure(FetchErrorKind::kDeadline,
                            what + ": deadline of " + std::to_string(request_.timeout.count()) +
                                " ms exceeded while " + stage_ + read,
                            bytes_read_));
    }
    if (ec == net::error::connection_refused) {
      return Finish(Failure(FetchErrorKind::kConnectRefused, what + ": connection refused"));
    }
    if (ec == http::error::body_limit) {
      return Finish(Failure(FetchErrorKind::kTooLarge,
                            what + ": the body exceeds the limit of " +
                                std::to_string(o.body_limit) + " bytes" + read,
                            bytes_read_));
    }
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      return Finish(Failure(FetchErrorKind::kTooLarge,
                            what + ": the headers exceed the limit of " +
                                std::to_string(o.header_limit) + " bytes" + read,
                            bytes_read_));
    }
    if (ec == http::error::end_of_stream || ec == http::error::partial_message) {
      return Finish(Failure(FetchErrorKind::kTransport,
                            what + ": the connection closed before the answer ended" + read,
                            bytes_read_));
    }
    if (ec.category() == make_error_code(http::error::bad_version).category()) {
      return Finish(Failure(FetchErrorKind::kMalformed,
                            what + ": not an HTTP answer (" + ec.message() + ")" + read,
                            bytes_read_));
    }
    Finish(Failure(FetchErrorKind::kTransport, what + ": " + ec.message() + " while " + stage_,
                   bytes_read_));
  }

  void Finish(FetchResult result) {
    if (finished_) return;
    finished_ = true;
    ErrorCode ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    impl_.Done(this, std::move(result), done_);
  }

  Impl& impl_;
  FetchRequest request_;
  Callback done_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::empty_body> request_line_;
  std::optional<http::response_parser<http::string_body>> parser_;
  const char* stage_ = "starting";
  std::size_t bytes_read_ = 0;
  bool cancelled_ = false;
  bool finished_ = false;
};

DirectFetcher::Impl::Impl(DirectFetcherOptions options)
    : options_(std::move(options)), work_(net::make_work_guard(io_)) {
  if (options_.threads < 1 || options_.max_in_flight < 1 || options_.body_limit < 1 ||
      options_.header_limit < 1) {
    throw std::invalid_argument("DirectFetcher: threads and limits must be at least 1");
  }
  threads_.reserve(static_cast<std::size_t>(options_.threads));
  for (int i = 0; i < options_.threads; ++i) threads_.emplace_back([this] { io_.run(); });
}

DirectFetcher::Impl::~Impl() {
  std::deque<Pending> queued;
  std::vector<std::shared_ptr<Session>> running;
  {
    const std::lock_guard lock(mu_);
    stopping_ = true;
    queued.swap(queue_);
    for (auto& [_, weak] : sessions_) {
      if (auto s = weak.lock()) running.push_back(std::move(s));
    }
  }
  for (Pending& p : queued) {
    Deliver(p.done,
            Failure(FetchErrorKind::kCancelled, Describe(p.request) + ": the fetcher stopped"));
  }
  for (auto& s : running) s->Cancel();
  running.clear();
  work_.reset();  // the threads end once the cancelled sessions have called back
  for (auto& t : threads_) t.join();
}

std::shared_ptr<DirectFetcher::Impl::Session> DirectFetcher::Impl::Admit(Pending pending) {
  auto session =
      std::make_shared<Session>(*this, std::move(pending.request), std::move(pending.done));
  sessions_.emplace(session.get(), session);
  return session;
}

void DirectFetcher::Impl::Fetch(FetchRequest request, Callback done) {
  std::optional<FetchResult> refused;
  std::shared_ptr<Session> start;
  {
    const std::lock_guard lock(mu_);
    if (stopping_) {
      refused = Failure(FetchErrorKind::kCancelled, Describe(request) + ": the fetcher stopped");
    } else if (sessions_.size() >= options_.max_in_flight && queue_.size() >= options_.max_queued) {
      refused = Failure(FetchErrorKind::kOverloaded, Describe(request) + ": the queue of " +
                                                         std::to_string(options_.max_queued) +
                                                         " fetches is full");
    }
    if (!refused) {
      Pending pending{std::move(request), std::move(done)};
      if (sessions_.size() < options_.max_in_flight) {
        start = Admit(std::move(pending));
      } else {
        queue_.push_back(std::move(pending));
      }
      request = {};
      done = nullptr;
    }
  }
  if (start) start->Start();
  if (refused) Deliver(done, std::move(*refused));
}

void DirectFetcher::Impl::Done(Session* session, FetchResult result, const Callback& done) {
  std::shared_ptr<Session> next;
  {
    const std::lock_guard lock(mu_);
    sessions_.erase(session);
    if (!stopping_ && !queue_.empty()) {
      next = Admit(std::move(queue_.front()));
      queue_.pop_front();
    }
  }
  if (next) next->Start();
  Deliver(done, std::move(result));
}

std::size_t DirectFetcher::Impl::in_flight() const {
  const std::lock_guard lock(mu_);
  return sessions_.size();
}

std::size_t DirectFetcher::Impl::queued() const {
  const std::lock_guard lock(mu_);
  return queue_.size();
}

DirectFetcher::DirectFetcher(DirectFetcherOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

DirectFetcher::~DirectFetcher() = default;

void DirectFetcher::Fetch(FetchRequest request, Callback done) {
  impl_->Fetch(std::move(request), std::move(done));
}

std::size_t DirectFetcher::in_flight() const { return impl_->in_flight(); }
std::size_t DirectFetcher::queued() const { return impl_->queued(); }

}  // namespace eoc::controller
