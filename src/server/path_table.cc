#include "server/path_table.h"

#include <algorithm>
#include <exception>
#include <stdexcept>

namespace eoc::server::internal {
namespace {

void Answer(Response& response, int status, std::string_view body) {
  response.Reset();
  response.set_status(status);
  response.body().assign(body);
}

}  // namespace

const Handler* PathTable::Route::Find(std::string_view method) const {
  for (const auto& [name, handler] : methods) {
    if (name == method) return &handler;
  }
  return nullptr;
}

void PathTable::Add(std::string_view method, std::string_view path, Handler handler) {
  if (method.empty()) throw std::invalid_argument("route " + std::string(path) + ": empty method");
  if (!path.starts_with('/')) {
    throw std::invalid_argument("route path \"" + std::string(path) + "\" does not start with /");
  }
  auto it = routes_.find(path);
  if (it == routes_.end()) it = routes_.emplace(std::string(path), Route{}).first;
  Route& route = it->second;
  if (route.Find(method) != nullptr) {
    throw std::invalid_argument("route " + std::string(method) + " " + std::string(path) +
                                " is already registered");
  }
  route.methods.emplace_back(std::string(method), std::move(handler));

  std::vector<std::string> names;
  for (const auto& entry : route.methods) names.push_back(entry.first);
  if (route.Find("GET") != nullptr && route.Find("HEAD") == nullptr) names.emplace_back("HEAD");
  std::sort(names.begin(), names.end());
  route.allow.clear();
  for (const auto& name : names) route.allow += (route.allow.empty() ? "" : ", ") + name;
}

void PathTable::Serve(const Request& request, Response& response, bool& omit_body,
                      const telemetry::Logger& log) const {
  omit_body = request.method() == "HEAD";  // a HEAD answer never has a body, whatever it is
  const auto it = routes_.find(request.path());
  if (it == routes_.end()) {
    Answer(response, 404, "not found\n");
    return;
  }
  const Route& route = it->second;
  const Handler* handler = route.Find(request.method());
  if (handler == nullptr && request.method() == "HEAD") {
    handler = route.Find("GET");
  }
  if (handler == nullptr) {
    Answer(response, 405, "method not allowed\n");
    response.AddHeader("Allow", route.allow);
    return;
  }
  try {
    (*handler)(request, response);
  } catch (const std::exception& e) {
    log.Error("handler failed",
              {{"method", request.method()}, {"path", request.path()}, {"error", e.what()}});
    Answer(response, 500, "internal server error\n");
  } catch (...) {
    log.Error("handler failed",
              {{"method", request.method()}, {"path", request.path()}, {"error", "unknown"}});
    Answer(response, 500, "internal server error\n");
  }
}

}  // namespace eoc::server::internal
