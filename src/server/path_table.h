// Internal to the server: its path table (HTTP dispatch, not the routing engine of src/routing):
// exact paths and patterns with {parameters} as whole segments, a handler per method. Built before
// the server starts and only read afterwards, so lookups take no lock.
//
//   internal::PathTable paths;
//   paths.Add("GET", "/healthz", HealthzHandler());
//   paths.Add("GET", "/v1/pools/{namespace}/{name}/pick", pick);  // request.params(): ns, name
//   bool omit_body = false;
//   paths.Serve(request, response, omit_body, log);   // 404, 405 + Allow, or the handler's
//
// An exact path wins over a pattern; among patterns, the first added that matches. A parameter
// matches one non-empty segment.
#pragma once

#include <cstddef>
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
  // Parameters a pattern may have.
  static constexpr std::size_t kMaxParams = 4;

  // Throws std::invalid_argument for an empty method, a path that does not start with '/', a
  // pattern with a malformed or empty {parameter} or more than kMaxParams, or a route that is
  // already there.
  void Add(std::string_view method, std::string_view path, Handler handler,
           BodyUse body = BodyUse::kRead);

  // What the route for `method` and `target` (its query ignored) does with a body; kRead when no
  // route matches (its 404 or 405 comes once the body is read).
  BodyUse BodyUseOf(std::string_view method, std::string_view target) const;

  // Answers `request` into `response` (and sets its params() for a pattern's handler).
  // `omit_body` is set for HEAD, which GET handlers answer when there is no HEAD handler.
  // A handler that throws gets a 500 in its place, and the exception is logged to `log`; then
  // Serve returns false.
  bool Serve(Request& request, Response& response, bool& omit_body,
             const telemetry::Logger& log) const;

 private:
  struct Method {
    std::string name;
    Handler handler;
    BodyUse body = BodyUse::kRead;
  };
  struct Route {
    std::vector<Method> methods;  // a few at most: a scan is fastest
    std::string allow;            // "GET, HEAD, POST", for 405
    const Method* Find(std::string_view method) const;
    void Add(std::string_view method, std::string_view path, Handler handler, BodyUse body);
  };
  struct Pattern {
    std::string text;                   // as registered
    std::vector<std::string> segments;  // between the slashes; "" stands for a parameter
    Route route;
  };
  // The route for `path`, with the parameters of a pattern's match in `params` (count in
  // `n_params`); null when none matches.
  const Route* Match(std::string_view path, std::string_view* params, std::size_t& n_params) const;

  StringMap<Route> routes_;
  std::vector<Pattern> patterns_;
};

}  // namespace eoc::server::internal
