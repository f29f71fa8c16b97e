#include "server/path_table.h"

#include <algorithm>
#include <array>
#include <exception>
#include <span>
#include <stdexcept>

namespace eoc::server::internal {
namespace {

void Answer(Response& response, int status, std::string_view message) {
  response.Reset();
  response.SetError(status, message);
}

// The segments of `path` after its leading '/', split at each '/'.
template <typename Visit>
bool ForEachSegment(std::string_view path, Visit&& visit) {
  std::size_t start = 1;
  for (;;) {
    const std::size_t end = path.find('/', start);
    if (!visit(path.substr(start, end == std::string_view::npos ? end : end - start))) {
      return false;
    }
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

}  // namespace

const PathTable::Method* PathTable::Route::Find(std::string_view method) const {
  for (const Method& entry : methods) {
    if (entry.name == method) return &entry;
  }
  return nullptr;
}

void PathTable::Route::Add(std::string_view method, std::string_view path, Handler handler,
                           BodyUse body) {
  if (Find(method) != nullptr) {
    throw std::invalid_argument("route " + std::string(method) + " " + std::string(path) +
                                " is already registered");
  }
  methods.push_back({.name = std::string(method), .handler = std::move(handler), .body = body});
  std::vector<std::string> names;
  names.reserve(methods.size());
  for (const Method& entry : methods) names.push_back(entry.name);
  if (Find("GET") != nullptr && Find("HEAD") == nullptr) names.emplace_back("HEAD");
  std::sort(names.begin(), names.end());
  allow.clear();
  for (const auto& name : names) allow += (allow.empty() ? "" : ", ") + name;
}

void PathTable::Add(std::string_view method, std::string_view path, Handler handler, BodyUse body) {
  if (method.empty()) throw std::invalid_argument("route " + std::string(path) + ": empty method");
  if (!path.starts_with('/')) {
    throw std::invalid_argument("route path \"" + std::string(path) + "\" does not start with /");
  }
  if (path.find('{') == std::string_view::npos && path.find('}') == std::string_view::npos) {
    auto it = routes_.find(path);
    if (it == routes_.end()) it = routes_.emplace(std::string(path), Route{}).first;
    it->second.Add(method, path, std::move(handler), body);
    return;
  }
  Pattern pattern{.text = std::string(path)};
  std::size_t params = 0;
  ForEachSegment(path, [&](std::string_view segment) {
    const bool opens = segment.starts_with('{');
    const bool closes = segment.ends_with('}');
    if (opens || closes || segment.find_first_of("{}") != std::string_view::npos) {
      if (!opens || !closes || segment.size() < 3 ||
          segment.substr(1, segment.size() - 2).find_first_of("{}") != std::string_view::npos) {
        throw std::invalid_argument("route path \"" + std::string(path) + "\": segment \"" +
                                    std::string(segment) + "\" is not a whole {parameter}");
      }
      if (++params > kMaxParams) {
        throw std::invalid_argument("route path \"" + std::string(path) + "\": more than " +
                                    std::to_string(kMaxParams) + " parameters");
      }
      pattern.segments.emplace_back();
    } else {
      pattern.segments.emplace_back(segment);
    }
    return true;
  });
  for (Pattern& existing : patterns_) {
    if (existing.text == path) {
      existing.route.Add(method, path, std::move(handler), body);
      return;
    }
  }
  pattern.route.Add(method, path, std::move(handler), body);
  patterns_.push_back(std::move(pattern));
}

const PathTable::Route* PathTable::Match(std::string_view path, std::string_view* params,
                                         std::size_t& n_params) const {
  n_params = 0;
  if (const auto it = routes_.find(path); it != routes_.end()) return &it->second;
  if (!path.starts_with('/')) return nullptr;
  for (const Pattern& pattern : patterns_) {
    std::size_t i = 0;
    n_params = 0;
    const bool matched = ForEachSegment(path, [&](std::string_view segment) {
      if (i >= pattern.segments.size()) return false;
      const std::string& want = pattern.segments[i++];
      if (want.empty()) {
        if (segment.empty()) return false;
        params[n_params++] = segment;
        return true;
      }
      return segment == want;
    });
    if (matched && i == pattern.segments.size()) return &pattern.route;
  }
  n_params = 0;
  return nullptr;
}

BodyUse PathTable::BodyUseOf(std::string_view method, std::string_view target) const {
  std::array<std::string_view, kMaxParams> params;
  std::size_t n_params = 0;
  const Route* route = Match(target.substr(0, target.find('?')), params.data(), n_params);
  const Method* found = route == nullptr ? nullptr : route->Find(method);
  return found == nullptr ? BodyUse::kRead : found->body;
}

bool PathTable::Serve(Request& request, Response& response, bool& omit_body,
                      const telemetry::Logger& log) const {
  omit_body = request.method() == "HEAD";  // a HEAD answer never has a body, whatever it is
  std::array<std::string_view, kMaxParams> params;
  std::size_t n_params = 0;
  const Route* route = Match(request.path(), params.data(), n_params);
  if (route == nullptr) {
    Answer(response, 404, "no such path: " + std::string(request.path()));
    return true;
  }
  const Method* handler = route->Find(request.method());
  if (handler == nullptr && request.method() == "HEAD") {
    handler = route->Find("GET");
  }
  if (handler == nullptr) {
    Answer(response, 405, "method " + std::string(request.method()) + " is not allowed here");
    response.AddHeader("Allow", route->allow);
    return true;
  }
  request.set_params(std::span<const std::string_view>(params.data(), n_params));
  bool ok = true;
  try {
    handler->handler(request, response);
  } catch (const std::exception& e) {
    ok = false;
    log.Error("handler failed",
              {{"method", request.method()}, {"path", request.path()}, {"error", e.what()}});
    Answer(response, 500, "internal server error");
  } catch (...) {
    ok = false;
    log.Error("handler failed",
              {{"method", request.method()}, {"path", request.path()}, {"error", "unknown"}});
    Answer(response, 500, "internal server error");
  }
  request.set_params({});
  return ok;
}

}  // namespace eoc::server::internal
