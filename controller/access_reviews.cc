#include "controller/access_reviews.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "common/json_members.h"

namespace eoc::controller {
namespace {

using Outcome = server::Reviewer::Outcome;
using nlohmann::json;

const kube::ResourceRef kTokenReviews{.group = "authentication.k8s.io",
                                      .version = "v1",
                                      .resource = "tokenreviews",
                                      .namespaced = false};
const kube::ResourceRef kAccessReviews{.group = "authorization.k8s.io",
                                       .version = "v1",
                                       .resource = "subjectaccessreviews",
                                       .namespaced = false};

// A string member of `object` within the bounds; "" when absent, nullopt when not a string or
// over them.
std::optional<std::string> BoundedString(const json& object, const char* name) {
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) return std::nullopt;
  const auto& text = it->get_ref<const std::string&>();
  if (text.size() > KubeReviewer::kMaxNameBytes) return std::nullopt;
  return text;
}

// A list of strings within the bounds, into `out`; false when malformed or over them.
bool BoundedList(const json& list, std::size_t max_items, std::vector<std::string>& out) {
  if (list.is_null()) return true;
  if (!list.is_array() || list.size() > max_items) return false;
  for (const auto& item : list) {
    if (!item.is_string() ||
        item.get_ref<const std::string&>().size() > KubeReviewer::kMaxNameBytes)
      return false;
    out.push_back(item.get<std::string>());
  }
  return true;
}

// status.user of a TokenReview; nullopt when it is malformed or over the bounds.
std::optional<server::UserInfo> UserOf(const json& user) {
  if (!user.is_object()) return std::nullopt;
  server::UserInfo out;
  auto username = BoundedString(user, "username");
  auto uid = BoundedString(user, "uid");
  if (!username || username->empty() || !uid) return std::nullopt;
  out.username = std::move(*username);
  out.uid = std::move(*uid);
  if (const auto groups = user.find("groups");
      groups != user.end() && !BoundedList(*groups, KubeReviewer::kMaxGroups, out.groups)) {
    return std::nullopt;
  }
  if (const auto extra = user.find("extra"); extra != user.end() && !extra->is_null()) {
    if (!extra->is_object() || extra->size() > KubeReviewer::kMaxExtraKeys) return std::nullopt;
    for (const auto& [key, values] : extra->items()) {
      if (key.size() > KubeReviewer::kMaxNameBytes) return std::nullopt;
      auto& entry = out.extra.emplace_back(key, std::vector<std::string>());
      if (!BoundedList(values, KubeReviewer::kMaxExtraValues, entry.second)) return std::nullopt;
    }
  }
  return out;
}

}  // namespace

server::Reviewer::TokenAnswer KubeReviewer::ReviewToken(const std::string& token) {
  const json review = {{"apiVersion", "authentication.k8s.io/v1"},
                       {"kind", "TokenReview"},
                       {"spec", {{"token", token}}}};
  const auto answer = client_.Create(kTokenReviews, "", review);
  if (!answer) {
    log_.Error("a TokenReview failed",
               {{"code", answer.error().code}, {"reason", answer.error().reason}});
    return {};
  }
  const json* status = MemberOrNull(*answer, "status");
  if (status == nullptr || !status->is_object() || !status->value("authenticated", false)) {
    return {.outcome = Outcome::kNo};
  }
  const json* member = MemberOrNull(status, "user");
  auto user = UserOf(member != nullptr ? *member : json());
  if (!user) {
    log_.Warn("a TokenReview named a user past the bounds: refused", {});
    return {.outcome = Outcome::kNo};
  }
  return {.outcome = Outcome::kYes, .user = std::move(*user)};
}

Outcome KubeReviewer::ReviewAccess(const server::UserInfo& user,
                                   const server::AccessRequest& request) {
  json spec = {{"user", user.username}, {"groups", user.groups}};
  if (!user.uid.empty()) spec["uid"] = user.uid;
  if (!user.extra.empty()) {
    json extra = json::object();
    for (const auto& [key, values] : user.extra) extra[key] = values;
    spec["extra"] = std::move(extra);
  }
  if (!request.path.empty()) {
    spec["nonResourceAttributes"] = {{"path", request.path}, {"verb", request.verb}};
  } else {
    spec["resourceAttributes"] = {{"namespace", request.ns},
                                  {"verb", request.verb},
                                  {"group", server::kPickGroup},
                                  {"resource", server::kPickResource},
                                  {"subresource", server::kPickSubresource}};
  }
  const json review = {{"apiVersion", "authorization.k8s.io/v1"},
                       {"kind", "SubjectAccessReview"},
                       {"spec", std::move(spec)}};
  const auto answer = client_.Create(kAccessReviews, "", review);
  if (!answer) {
    log_.Error("a SubjectAccessReview failed",
               {{"code", answer.error().code}, {"reason", answer.error().reason}});
    return Outcome::kUnavailable;
  }
  const json* status = MemberOrNull(*answer, "status");
  const bool allowed = status != nullptr && status->is_object() && status->value("allowed", false);
  return allowed ? Outcome::kYes : Outcome::kNo;
}

}  // namespace eoc::controller
