// A pool's key, "namespace/name" (PoolKey, pool_reconciler.h, makes it), taken apart.
#pragma once

#include <string>
#include <utility>

namespace eoc::controller {

// "namespace/name" -> {"namespace", "name"}; {"", key} without a slash.
inline std::pair<std::string, std::string> SplitPoolKey(const std::string& key) {
  const auto slash = key.find('/');
  if (slash == std::string::npos) return {"", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

}  // namespace eoc::controller
