// Helpers for informer integration tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "control_plane.h"
#include "eventually.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "kube/pod_view.h"

namespace eoc::testing {

// A bare pod: without a scheduler it stays Pending, which is all an informer needs.
inline nlohmann::json Pod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", {{"app", "informer-test"}}}}},
          {"spec",
           {{"automountServiceAccountToken", false},
            {"containers", nlohmann::json::array({{{"name", "w"}, {"image", "w"}}})}}}};
}

// What the handlers saw, as "add name", "update name", "delete name".
class EventLog {
 public:
  kube::Informer<kube::PodView>::Handlers Handlers() {
    return {.on_add = [this](const kube::PodView& p) { Push("add", p.name); },
            .on_update = [this](const kube::PodView&,
                                const kube::PodView& p) { Push("update", p.name); },
            .on_delete = [this](const kube::PodView& p) { Push("delete", p.name); }};
  }
  bool Saw(const std::string& what, const std::string& name) const {
    const std::string wanted = what + " " + name;
    const std::lock_guard lock(mu_);
    return std::ranges::any_of(events_, [&wanted](const std::string& e) { return e == wanted; });
  }

 private:
  void Push(const std::string& what, const std::string& name) {
    const std::lock_guard lock(mu_);
    events_.push_back(what + " " + name);
  }
  mutable std::mutex mu_;
  std::vector<std::string> events_;
};

struct CountingMetrics final : kube::ReflectorMetrics {
  void OnList(std::size_t /*items*/) override { ++lists; }
  void OnWatchStart() override { ++watches; }
  void OnEvent(kube::WatchEventType type) override {
    if (type == kube::WatchEventType::kBookmark) ++bookmarks;
    if (type == kube::WatchEventType::kError) ++error_events;
  }
  void OnError(const kube::Status& s) override {
    if (s.IsGone()) ++gone;
  }
  std::atomic<int> lists{0}, watches{0}, bookmarks{0}, error_events{0}, gone{0};
};

// Pod key -> resourceVersion from a fresh list, to compare with Informer::ResourceVersions().
inline std::map<std::string, std::string> ServerVersions(kube::Client& client,
                                                         const std::string& ns) {
  std::map<std::string, std::string> out;
  auto list = client.ListAll(kube::resources::kPods, ns, {});
  if (!list) return out;
  for (const auto& item : list->items) {
    out[kube::ObjectKey(item)] = item["metadata"]["resourceVersion"].get<std::string>();
  }
  return out;
}

// Runs a shell command; returns its standard output, or fails the test.
inline std::string Shell(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return "";
  std::string out;
  char buf[4096];
  while (fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  const int rc = pclose(p);
  EXPECT_EQ(rc, 0) << command << "\n" << out;
  return out;
}

#ifdef EOC_CONTROL_PLANE
// SIGKILLs the plane's kube-apiserver and starts it again on the same port: every watch breaks.
// `flags`: "--watch-cache=true" or "=false" to restart it with its watch cache on or off.
inline void RestartApiServer(const ControlPlane& plane, const std::string& flags = "") {
  Shell(std::string(EOC_CONTROL_PLANE) + " restart-apiserver " + plane.dir() + " " + flags +
        " 2>&1");
}
#endif

}  // namespace eoc::testing
