// Fakes of the pool reconcile's three seams, for its unit tests: the caches (PoolStore), the API
// calls (PoolClient: the status write and the fresh read after a conflict) and the Events
// (kube::EventSink); and the pool "prod/chat" they serve.
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller/pool_reconciler.h"

namespace eoc::controller::testing {

using nlohmann::json;

inline constexpr const char* kKey = "prod/chat";

inline json PoolJson(const std::string& resource_version,
                     json selector = {{"matchLabels", {{"app", "chat"}}}}) {
  return {{"apiVersion", "eoc.dev/v1alpha1"},
          {"kind", "InferencePool"},
          {"metadata",
           {{"name", "chat"},
            {"namespace", "prod"},
            {"uid", "uid-chat"},
            {"generation", 1},
            {"resourceVersion", resource_version}}},
          {"spec", {{"selector", std::move(selector)}, {"targetPort", 8000}}}};
}

class FakeStore final : public PoolStore {
 public:
  std::shared_ptr<const PoolObject> GetPool(const std::string& key) const override {
    const std::lock_guard lock(mu_);
    const auto it = pools_.find(key);
    return it == pools_.end() ? nullptr : it->second;
  }
  std::vector<std::shared_ptr<const PoolObject>> ListPools() const override {
    const std::lock_guard lock(mu_);
    std::vector<std::shared_ptr<const PoolObject>> out;
    out.reserve(pools_.size());
    for (const auto& [key, pool] : pools_) out.push_back(pool);
    return out;
  }
  std::vector<std::shared_ptr<const kube::PodView>> ListPods() const override {
    const std::lock_guard lock(mu_);
    return pods_;
  }
  std::shared_ptr<const kube::NodeView> GetNode(const std::string& name) const override {
    const std::lock_guard lock(mu_);
    const auto it = nodes_.find(name);
    return it == nodes_.end() ? nullptr : it->second;
  }

  // As the informer does once it sees the object (a write's answer, or a change by someone else).
  void PutPool(const json& object) {
    auto pool = std::make_shared<const PoolObject>(ToPoolObject(object));
    const std::lock_guard lock(mu_);
    pools_[PoolKey(pool->pool)] = std::move(pool);
  }
  void DeletePool(const std::string& key) {
    const std::lock_guard lock(mu_);
    pools_.erase(key);
  }
  void AddPod(std::shared_ptr<const kube::PodView> pod) {
    const std::lock_guard lock(mu_);
    pods_.push_back(std::move(pod));
  }
  void SetPods(std::vector<std::shared_ptr<const kube::PodView>> pods) {
    const std::lock_guard lock(mu_);
    pods_ = std::move(pods);
  }
  void PutNode(kube::NodeView node) {
    const std::lock_guard lock(mu_);
    std::string name = node.name;  // the right side is evaluated first: it moves the name
    nodes_[std::move(name)] = std::make_shared<const kube::NodeView>(std::move(node));
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const PoolObject>> pools_;
  std::vector<std::shared_ptr<const kube::PodView>> pods_;
  std::map<std::string, std::shared_ptr<const kube::NodeView>> nodes_;
};

// Records every status write; answers each with the next scripted error, else success (the
// object with its resourceVersion bumped). Fresh reads answer `fresh`.
class FakeClient final : public PoolClient {
 public:
  kube::Result<json> UpdateStatus(const json& pool) override {
    writes.push_back(pool);
    if (!errors.empty()) {
      kube::Status error = errors.front();
      errors.pop_front();
      return error;
    }
    json written = pool;
    written["metadata"]["resourceVersion"] = std::to_string(++version);
    return written;
  }
  kube::Result<json> GetPool(const std::string& ns, const std::string& name) override {
    reads.push_back(ns + "/" + name);
    return fresh;
  }

  std::vector<json> writes;
  std::deque<kube::Status> errors;
  std::vector<std::string> reads;
  json fresh;
  int version = 100;
};

struct RecordedEvent {
  kube::EventType type;
  std::string reason;
  std::string message;
};

class FakeEvents final : public kube::EventSink {
 public:
  void Record(const kube::ObjectReference& object, kube::EventType type, std::string_view reason,
              std::string_view message) override {
    EXPECT_EQ(object.kind, "InferencePool");
    EXPECT_EQ(object.uid, "uid-chat");
    events.push_back({type, std::string(reason), std::string(message)});
  }
  std::vector<RecordedEvent> events;
};

}  // namespace eoc::controller::testing
