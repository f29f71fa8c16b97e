// A cap on the distinct things the pools of one namespace may name (Carbon Aware SDK URLs,
// ConfigMaps, exporter selectors): each costs the operator a poll or a watch, and a tenant could
// otherwise make a hundred. Pools that name the same thing share it and count once; a pool that
// names something new when its namespace is at the cap is refused, and the pools admitted before
// keep what they have.
//
//   NamespaceCap sdk_urls({.limit = 4, .what = "Carbon Aware SDK URLs",
//                          .flag = "--max-carbon-sdk-urls-per-namespace"});
//   std::string why = sdk_urls.Use("prod/chat", "prod", url);  // "" when admitted
//   sdk_urls.Forget("prod/chat");
//
// Not thread-safe: its owner calls it under a lock of its own.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>

namespace eoc {

struct NamespaceCapOptions {
  std::size_t limit = 4;  // distinct values per namespace
  std::string what;       // the values, plural, for messages: "Carbon Aware SDK URLs"
  std::string flag;       // the flag that sets the limit: "--max-carbon-sdk-urls-per-namespace"
};

class NamespaceCap {
 public:
  explicit NamespaceCap(NamespaceCapOptions options) : options_(std::move(options)) {}

  // `user` (a pool's key), of namespace `ns`, uses `value` from now on ("" for none) instead of
  // what it used before. Returns "" when it may: `value` is empty, another user of `ns` uses it
  // already, or `ns` uses fewer distinct values than the limit. Else the user uses none, and the
  // answer says why, naming the namespace, the limit and its flag (never the value, which is the
  // tenant's).
  std::string Use(const std::string& user, const std::string& ns, const std::string& value);
  // `user` uses nothing any more.
  void Forget(const std::string& user);

  // The distinct values `ns` uses now.
  std::size_t Distinct(const std::string& ns) const;

 private:
  NamespaceCapOptions options_;
  std::map<std::string, std::pair<std::string, std::string>> users_;  // user -> (ns, value)
  std::map<std::string, std::map<std::string, std::size_t>> uses_;    // ns -> value -> users
};

}  // namespace eoc
