#include "common/namespace_cap.h"

namespace eoc {

std::string NamespaceCap::Use(const std::string& user, const std::string& ns,
                              const std::string& value) {
  if (const auto it = users_.find(user);
      it != users_.end() && it->second.first == ns && it->second.second == value) {
    return "";
  }
  Forget(user);
  if (value.empty()) return "";
  auto& values = uses_[ns];
  if (!values.contains(value) && values.size() >= options_.limit) {
    if (values.empty()) uses_.erase(ns);
    return "namespace \"" + ns + "\" already uses " + std::to_string(options_.limit) +
           " distinct " + options_.what + " in its pools, the limit (" + options_.flag + ")";
  }
  ++values[value];
  users_.insert_or_assign(user, std::make_pair(ns, value));
  return "";
}

void NamespaceCap::Forget(const std::string& user) {
  const auto it = users_.find(user);
  if (it == users_.end()) return;
  const auto& [ns, value] = it->second;
  auto& values = uses_[ns];
  if (--values[value] == 0) values.erase(value);
  if (values.empty()) uses_.erase(ns);
  users_.erase(it);
}

std::size_t NamespaceCap::Distinct(const std::string& ns) const {
  const auto it = uses_.find(ns);
  return it == uses_.end() ? 0 : it->second.size();
}

}  // namespace eoc
