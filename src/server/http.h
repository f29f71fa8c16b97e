// What a handler sees of a request, and the response it fills. Both are plain views and values
// with no Boost type in them, so handlers can be tested without a socket:
//
//   void Pick(const eoc::server::Request& req, eoc::server::Response& resp) {
//     auto session = req.header("x-session-id");            // case-insensitive; nullopt if absent
//     resp.AddHeader("x-gateway-destination-endpoint", "10.0.0.7:8000");   // no body: fastest
//   }
//   std::vector<eoc::server::Header> headers = {{"X-Session-Id", "s1"}};
//   eoc::server::Request req("GET", "/v1/pools/ns/a/pick?x=1", headers, "");
//   eoc::server::Response resp;
//   Pick(req, resp);
//
// The server keeps one Response per connection and Reset()s it between requests, so a handler that
// answers with a status and a header allocates nothing once the connection is warm.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace eoc::server {

struct Header {
  std::string_view name;
  std::string_view value;
};

// A request, as views into the server's buffers: valid only while the handler runs.
class Request {
 public:
  Request(std::string_view method, std::string_view target, std::span<const Header> headers,
          std::string_view body);

  // "GET", as sent: methods are case-sensitive.
  std::string_view method() const { return method_; }
  std::string_view target() const { return target_; }  // "/v1/pick?a=b", as sent
  std::string_view path() const { return path_; }      // "/v1/pick": the target before any '?'
  std::string_view query() const { return query_; }    // "a=b": after the '?', still encoded
  std::string_view body() const { return body_; }
  std::span<const Header> headers() const { return headers_; }
  // The first header with this name (case-insensitive), or nullopt.
  std::optional<std::string_view> header(std::string_view name) const;

 private:
  std::string_view method_;
  std::string_view target_;
  std::string_view path_;
  std::string_view query_;
  std::span<const Header> headers_;
  std::string_view body_;
};

// A response: 200, no headers of its own and an empty body until the handler says otherwise. The
// server adds Content-Length, Connection and Date, and Content-Type when there is a body.
class Response {
 public:
  Response() = default;

  int status() const { return status_; }
  // 200 to 599; throws std::invalid_argument otherwise (1xx are the server's business).
  void set_status(int status);

  const std::string& content_type() const { return content_type_; }
  void set_content_type(std::string_view content_type);  // text/plain; charset=utf-8 by default

  std::string& body() { return body_; }  // append to it, or assign
  const std::string& body() const { return body_; }

  // Adds a header line. Throws std::invalid_argument for a name that is not an HTTP token, a value
  // with CR, LF or NUL in it (header injection), or a header the server sets itself
  // (Content-Length, Content-Type, Connection, Date, Transfer-Encoding).
  void AddHeader(std::string_view name, std::string_view value);
  // The added headers, each as "Name: value\r\n".
  std::string_view header_lines() const { return header_lines_; }

  // Back to 200, default content type, no headers, empty body; keeps the memory for reuse.
  void Reset();

 private:
  int status_ = 200;
  std::string content_type_{kDefaultContentType};
  std::string body_;
  std::string header_lines_;

  static constexpr std::string_view kDefaultContentType = "text/plain; charset=utf-8";
};

// Answers one request; runs on an I/O thread, so it must not block.
using Handler = std::function<void(const Request&, Response&)>;

// "text/plain; version=0.0.4; charset=utf-8": the Prometheus text exposition format.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

}  // namespace eoc::server
