// A fake Carbon Aware SDK WebAPI on 127.0.0.1 for tests: every request is answered with the body
// and status the test sets (JSON, as the SDK's ASP.NET Core WebAPI sends it), one connection each.
//
//   eoc::testing::FakeCarbonSdk sdk(R"([{"location":"eastus","time":"...","rating":70}])");
//   ... spec.carbon.carbonAwareSdk.url = sdk.url() ...
//   sdk.Set("oops", "500 Internal Server Error");   // the SDK starts failing
//   EXPECT_EQ(sdk.heads().size(), 2U);              // the requests' heads, in order
#pragma once

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "local_http_server.h"

namespace eoc::testing {

class FakeCarbonSdk {
 public:
  explicit FakeCarbonSdk(std::string body, std::string status = "200 OK")
      : body_(std::move(body)),
        status_(std::move(status)),
        server_([this](LocalHttpServer& /*server*/, int fd, const std::string& /*head*/) {
          std::string answer;
          {
            const std::lock_guard lock(mu_);
            answer = Answer(body_, status_);
          }
          LocalHttpServer::Write(fd, answer);
        }) {}

  void Set(std::string body, std::string status = "200 OK") {
    const std::lock_guard lock(mu_);
    body_ = std::move(body);
    status_ = std::move(status);
  }
  std::string url() const { return server_.url(); }
  std::vector<std::string> heads() const { return server_.heads(); }

  // A whole HTTP/1.1 answer with a JSON body.
  static std::string Answer(const std::string& body, const std::string& status = "200 OK") {
    return "HTTP/1.1 " + status + "\r\nContent-Type: application/json; charset=utf-8\r\n" +
           "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
           body;
  }

 private:
  std::mutex mu_;
  std::string body_;
  std::string status_;
  LocalHttpServer server_;
};

}  // namespace eoc::testing
