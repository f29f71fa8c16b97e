// Internal to the server: its path table (HTTP dispatch, not the routing engine of src/routing):
// exact paths, a handler per method. Built before the server starts and only read afterwards, so
// lookups take no lock.
//
//   internal::PathTable paths;
//   paths.Add("GET", "/healthz", HealthzHandler());
//   bool omit_body = false;
//   paths.Serve(request, response, omit_body, log);   // 404, 405 + Allow, or the handler's
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/text.h"
#include "server/http.h"
#include "telemetry/logging.h"

namespace eoc::server::internal {

class PathTable {
 public:
  // Throws std::invalid_argument for an empty method, a path that does not start with '/', or a
  // route that is already there.
  void Add(std::string_view method, std::string_view path, Handler handler);

  // Answers `request` into `response`. `omit_body` is set for HEAD, which GET handlers answer when
  // there is no HEAD handler.
  // A handler that throws gets a 500 in its place, and the exception is logged to `log`.
  void Serve(const Request& request, Response& response, bool& omit_body,
             const telemetry::Logger& log) const;

 private:
  struct Route {
    std::vector<std::pair<std::string, Handler>> methods;  // a few at most: a scan is fastest
    std::string allow;                                     // "GET, HEAD, POST", for 405
    const Handler* Find(std::string_view method) const;
  };
  StringMap<Route> routes_;
};

}  // namespace eoc::server::internal
