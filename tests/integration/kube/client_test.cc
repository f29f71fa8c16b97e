// The REST client against a real kube-apiserver and kube-controller-manager.
#include "kube/client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>  // NOLINT(modernize-deprecated-headers): popen
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "common/url.h"
#include "control_plane.h"
#include "files.h"
#include "kube/config.h"
#include "kube/discovery.h"
#include "manifests.h"
#include "namespaced_test.h"

namespace eoc::kube {
namespace {

using nlohmann::json;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using testing::UniqueName;

#define ASSERT_OK(r) ASSERT_TRUE(r) << (r).error().ToString()

ClientOptions Fast() {
  ClientOptions o;
  o.qps = 200;  // the tests make many calls; the default limit is exercised in unit tests
  o.burst = 200;
  return o;
}

class KubeClientTest : public testing::NamespacedTest {
 protected:
  static json ConfigMap(const std::string& name, const std::string& value) {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}, {"labels", {{"suite", "crud"}}}}},
            {"data", {{"value", value}}}};
  }
};

TEST_F(KubeClientTest, CrudAndPagingOverManyObjects) {
  constexpr int kCount = 120;
  for (int i = 0; i < kCount; ++i) {
    auto r =
        client_->Create(resources::kConfigMaps, ns_, ConfigMap("cm-" + std::to_string(i), "v"));
    ASSERT_OK(r);
  }
  // One page at a time: 25 items, a continue token, and (for a list without selectors) how many
  // remain.
  auto first = client_->List(resources::kConfigMaps, ns_, {.limit = 25});
  ASSERT_OK(first);
  EXPECT_EQ(first->items.size(), 25U);
  EXPECT_FALSE(first->continue_token.empty());
  ASSERT_TRUE(first->remaining_item_count.has_value());
  auto unpaged = client_->List(resources::kConfigMaps, ns_, {});
  ASSERT_OK(unpaged);
  EXPECT_EQ(*first->remaining_item_count, static_cast<std::int64_t>(unpaged->items.size()) - 25);

  // Every page: all objects, each once.
  auto all =
      client_->ListAll(resources::kConfigMaps, ns_, {.label_selector = "suite=crud", .limit = 25});
  ASSERT_OK(all);
  std::set<std::string> names;
  for (const auto& item : all->items) names.insert(item["metadata"]["name"].get<std::string>());
  EXPECT_EQ(names.size(), static_cast<std::size_t>(kCount));
  EXPECT_FALSE(all->resource_version.empty());

  // Get, update, merge patch, JSON patch, delete.
  auto got = client_->Get(resources::kConfigMaps, ns_, "cm-7");
  ASSERT_OK(got);
  json obj = *got;
  obj["data"]["value"] = "updated";
  auto updated = client_->Update(resources::kConfigMaps, ns_, obj);
  ASSERT_OK(updated);
  EXPECT_EQ((*updated)["data"]["value"], "updated");

  auto merged = client_->Patch(resources::kConfigMaps, ns_, "cm-7", PatchType::kMerge,
                               {{"data", {{"extra", "x"}}}});
  ASSERT_OK(merged);
  EXPECT_EQ((*merged)["data"]["extra"], "x");
  EXPECT_EQ((*merged)["data"]["value"], "updated");

  auto patched = client_->Patch(
      resources::kConfigMaps, ns_, "cm-7", PatchType::kJson,
      json::array({{{"op", "replace"}, {"path", "/data/value"}, {"value", "json-patched"}}}));
  ASSERT_OK(patched);
  EXPECT_EQ((*patched)["data"]["value"], "json-patched");

  for (int i = 0; i < 10; ++i) {
    auto d = client_->Delete(resources::kConfigMaps, ns_, "cm-" + std::to_string(i));
    ASSERT_OK(d);
  }
  auto after = client_->ListAll(resources::kConfigMaps, ns_, {.label_selector = "suite=crud"});
  ASSERT_OK(after);
  EXPECT_EQ(after->items.size(), static_cast<std::size_t>(kCount - 10));
  auto gone = client_->Get(resources::kConfigMaps, ns_, "cm-0");
  ASSERT_FALSE(gone);
  EXPECT_TRUE(gone.error().IsNotFound());
  EXPECT_THAT(gone.error().message, HasSubstr("\"cm-0\" not found"));
}

TEST_F(KubeClientTest, DuplicateCreateIsAlreadyExists) {
  ASSERT_OK(client_->Create(resources::kConfigMaps, ns_, ConfigMap("dup", "a")));
  auto again = client_->Create(resources::kConfigMaps, ns_, ConfigMap("dup", "b"));
  ASSERT_FALSE(again);
  EXPECT_TRUE(again.error().IsAlreadyExists());
}

TEST_F(KubeClientTest, StaleUpdateIsConflict) {
  auto created = client_->Create(resources::kConfigMaps, ns_, ConfigMap("stale", "1"));
  ASSERT_OK(created);
  json a = *created;
  json b = *created;  // the same resourceVersion, as a second writer would hold
  a["data"]["value"] = "2";
  ASSERT_OK(client_->Update(resources::kConfigMaps, ns_, a));
  b["data"]["value"] = "3";
  auto conflict = client_->Update(resources::kConfigMaps, ns_, b);
  ASSERT_FALSE(conflict);
  EXPECT_TRUE(conflict.error().IsConflict());
  EXPECT_EQ(conflict.error().reason, "Conflict");
  EXPECT_THAT(conflict.error().message, HasSubstr("the object has been modified"));
}

TEST_F(KubeClientTest, ScaleSubresourceDrivesTheControllerManager) {
  ASSERT_OK(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("web", 1)));

  Discovery discovery(*client_);
  auto res = discovery.ResourceFor("apps/v1", "Deployment");
  ASSERT_OK(res);
  EXPECT_EQ(res->name, "deployments");
  EXPECT_TRUE(res->has_scale);

  auto scaled = client_->SetReplicas(res->Ref(), ns_, "web", 3);
  ASSERT_OK(scaled);
  EXPECT_EQ(scaled->spec_replicas, 3);

  // The controller manager's deployment and replicaset controllers create the pods.
  std::size_t pods = 0;
  for (int i = 0; i < 120 && pods != 3; ++i) {
    auto list = client_->List(resources::kPods, ns_, {.label_selector = "app=web"});
    ASSERT_OK(list);
    pods = list->items.size();
    if (pods != 3) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_EQ(pods, 3U);
  auto scale = client_->GetScale(res->Ref(), ns_, "web");
  ASSERT_OK(scale);
  EXPECT_EQ(scale->spec_replicas, 3);
  EXPECT_EQ(scale->selector, "app=web");
}

TEST_F(KubeClientTest, StatusSubresourceIsWrittenApartFromTheObject) {
  const json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "worker-0"}}},
      {"spec",
       {{"automountServiceAccountToken", false},
        {"containers", json::array({{{"name", "vllm"}, {"image", "vllm/vllm-openai"}}})}}}};
  ASSERT_OK(client_->Create(resources::kPods, ns_, pod));

  // What a kubelet (and later our node agent) reports: only /status takes it.
  auto patched =
      client_->Patch(resources::kPods, ns_, "worker-0", PatchType::kMerge,
                     {{"status", {{"phase", "Running"}, {"podIP", "127.0.0.7"}}}}, "status");
  ASSERT_OK(patched);
  EXPECT_EQ((*patched)["status"]["podIP"], "127.0.0.7");

  // A write to the object itself leaves status alone.
  auto got = client_->Get(resources::kPods, ns_, "worker-0");
  ASSERT_OK(got);
  json changed = *got;
  changed["metadata"]["labels"] = {{"role", "worker"}};
  changed["status"]["podIP"] = "127.0.0.99";
  auto updated = client_->Update(resources::kPods, ns_, changed);
  ASSERT_OK(updated);
  EXPECT_EQ((*updated)["metadata"]["labels"]["role"], "worker");
  EXPECT_EQ((*updated)["status"]["podIP"], "127.0.0.7");

  // And an update through /status with the object's resourceVersion is conditional too.
  json stale = *got;
  stale["status"]["phase"] = "Failed";
  auto conflict = client_->Update(resources::kPods, ns_, stale, "status");
  ASSERT_FALSE(conflict);
  EXPECT_TRUE(conflict.error().IsConflict());
}

TEST_F(KubeClientTest, DiscoveryKnowsWhatScales) {
  Discovery discovery(*client_);
  auto pods = discovery.ResourceFor("v1", "Pod");
  ASSERT_OK(pods);
  EXPECT_FALSE(pods->has_scale);
  EXPECT_TRUE(pods->has_status);
  auto rs = discovery.ResourceFor("apps/v1", "ReplicaSet");
  ASSERT_OK(rs);
  EXPECT_TRUE(rs->has_scale);
  auto nodes = discovery.ResourceFor("v1", "Node");
  ASSERT_OK(nodes);
  EXPECT_FALSE(nodes->namespaced);
  auto none = discovery.ResourceFor("apps/v1", "NoSuchKind");
  ASSERT_FALSE(none);
  EXPECT_TRUE(none.error().IsNotFound());
  auto no_group = discovery.ResourceFor("nosuch.example.com/v1", "Thing");
  ASSERT_FALSE(no_group);
  EXPECT_TRUE(no_group.error().IsNotFound());
}

TEST_F(KubeClientTest, TokenWithoutRbacGets403WithTheServersMessage) {
  auto nobody = Client::Create(plane_->TokenConfig(plane_->Var("EOC_KUBE_NOBODY_TOKEN")), Fast());
  auto r = nobody->List(resources::kPods, ns_, {});
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().IsForbidden());
  EXPECT_EQ(r.error().reason, "Forbidden");
  EXPECT_THAT(r.error().message, HasSubstr("User \"eoc-nobody\" cannot list resource \"pods\""));
}

TEST_F(KubeClientTest, UnknownTokenIs401) {
  auto stranger = Client::Create(plane_->TokenConfig("not-a-token"), Fast());
  auto r = stranger->GetPath("/api");
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().IsUnauthorized());
}

TEST_F(KubeClientTest, TlsFailsAgainstAWrongCa) {
  RestConfig cfg = plane_->AdminConfig();
  cfg.ca_pem = eoc::testing::ReadFile(plane_->Var("EOC_KUBE_WRONG_CA"));
  auto r = Client::Create(cfg, Fast())->GetPath("/api");
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().IsTransport());
  EXPECT_EQ(r.error().reason, kReasonTransport);
  EXPECT_THAT(r.error().message, AnyOf(HasSubstr("SSL"), HasSubstr("certificate")));
  // ...and so does a client that trusts only the system's roots.
  cfg.ca_pem.clear();
  EXPECT_FALSE(Client::Create(cfg, Fast())->GetPath("/api"));
  // Skipping verification is the user's explicit choice.
  cfg.insecure_skip_tls_verify = true;
  EXPECT_TRUE(Client::Create(cfg, Fast())->GetPath("/api"));
}

TEST_F(KubeClientTest, ClientCertificateAuthenticates) {
  auto client = Client::Create(plane_->CertConfig(), Fast());
  auto r = client->List(resources::kPods, ns_, {});
  ASSERT_OK(r);
}

TEST_F(KubeClientTest, TheControlPlanesKubeconfigLoads) {
  const RestConfig cfg = LoadKubeconfig({plane_->Var("EOC_KUBECONFIG")});
  EXPECT_EQ(cfg.server, plane_->server());
  auto r = Client::Create(cfg, Fast())->List(resources::kNamespaces, "", {});
  ASSERT_OK(r);
  EXPECT_FALSE(r->items.empty());
}

TEST_F(KubeClientTest, ExecPluginCredentialsAreAccepted) {
  const std::string dir = ::testing::TempDir();
  const std::string plugin = dir + "/" + UniqueName("plugin") + ".sh";
  {
    std::ofstream out(plugin);
    out << "#!/bin/sh\n"
        << "printf "
           "'{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
        << "\"status\":{\"token\":\"%s\"}}' \"$EOC_TOKEN\"\n";
  }
  ASSERT_EQ(std::system(("chmod +x " + plugin).c_str()), 0);  // NOLINT(concurrency-mt-unsafe)
  RestConfig cfg = plane_->TokenConfig("");
  ExecConfig exec;
  exec.api_version = "client.authentication.k8s.io/v1";
  exec.command = plugin;
  exec.env = {{"EOC_TOKEN", plane_->Var("EOC_KUBE_ADMIN_TOKEN")}};
  exec.interactive_mode = "Never";
  cfg.exec = exec;
  auto r = Client::Create(cfg, Fast())->List(resources::kPods, ns_, {});
  std::remove(plugin.c_str());
  ASSERT_OK(r);
}

TEST_F(KubeClientTest, WatchDeliversEventsAsTheyHappen) {
  auto list = client_->List(resources::kConfigMaps, ns_, {});
  ASSERT_OK(list);
  ListOptions o;
  o.resource_version = list->resource_version;
  o.timeout_seconds = 60;
  o.allow_watch_bookmarks = true;
  auto watch = client_->StartWatch(resources::kConfigMaps, ns_, o);
  ASSERT_OK(watch);

  ASSERT_OK(client_->Create(resources::kConfigMaps, ns_, ConfigMap("watched", "1")));
  ASSERT_OK(client_->Patch(resources::kConfigMaps, ns_, "watched", PatchType::kMerge,
                           {{"data", {{"value", "2"}}}}));
  ASSERT_OK(client_->Delete(resources::kConfigMaps, ns_, "watched"));

  std::vector<WatchEventType> seen;
  while (seen.size() < 3) {
    auto e = (*watch)->Next();
    ASSERT_OK(e);
    ASSERT_TRUE(e->has_value()) << "the watch ended early";
    if ((*e)->type == WatchEventType::kBookmark) continue;
    EXPECT_EQ((*e)->object["metadata"]["name"], "watched");
    seen.push_back((*e)->type);
  }
  EXPECT_THAT(seen, ::testing::ElementsAre(WatchEventType::kAdded, WatchEventType::kModified,
                                           WatchEventType::kDeleted));

  // Stop() from another thread ends a Next() that is waiting for an event that never comes.
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    (*watch)->Stop();
  });
  auto end = (*watch)->Next();
  stopper.join();
  ASSERT_OK(end);
  EXPECT_FALSE(end->has_value());
}

TEST_F(KubeClientTest, WatchEndsAtItsTimeout) {
  auto watch = client_->StartWatch(resources::kConfigMaps, ns_, {.timeout_seconds = 1});
  ASSERT_OK(watch);
  for (;;) {
    auto e = (*watch)->Next();
    ASSERT_OK(e);
    if (!e->has_value()) break;  // the server closed the stream: a clean end
  }
}

TEST_F(KubeClientTest, WatchConnectionsHaveTcpKeepalive) {
  auto watch = client_->StartWatch(resources::kConfigMaps, ns_, {.timeout_seconds = 60});
  ASSERT_OK(watch);
  const std::string url = plane_->server();  // SplitHttpUrl's views point into it
  const std::optional<HttpUrl> server = SplitHttpUrl(url);
  ASSERT_TRUE(server) << url;
  std::string error;
  const std::optional<HostPort> authority = SplitHostPort(server->authority, &error);
  ASSERT_TRUE(authority && authority->port) << url << ": " << error;
  const std::string port = std::to_string(*authority->port);
  // `ss -o` shows a keepalive timer on connections with SO_KEEPALIVE set, and `-p` their owner:
  // every connection of this process to the API server must have one.
  const std::string cmd = "ss -tnopH state established '( dport = :" + port + " )'";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  const std::string mine = "pid=" + std::to_string(getpid()) + ",";
  int ours = 0;
  char buf[4096];
  while (fgets(buf, sizeof(buf), p) != nullptr) {
    const std::string line = buf;
    if (line.find(mine) == std::string::npos) continue;
    ++ours;
    EXPECT_THAT(line, HasSubstr("keepalive"));
  }
  pclose(p);
  EXPECT_GE(ours, 1) << "no connection of this process found by: " << cmd;
  (*watch)->Stop();
}

}  // namespace
}  // namespace eoc::kube
