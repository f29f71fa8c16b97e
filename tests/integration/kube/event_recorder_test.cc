// The event recorder against a real kube-apiserver: Events are created, repeats fold into one
// Event, and Events about different objects stay apart.
#include "kube/event_recorder.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "kube/client.h"
#include "namespaced_test.h"

namespace eoc::kube {
namespace {

using nlohmann::json;
using std::chrono::seconds;

#define ASSERT_OK(r) ASSERT_TRUE(r) << (r).error().ToString()

class EventRecorderApiTest : public testing::NamespacedTest {
 protected:
  // A ConfigMap to be the Events' object, and a reference to it.
  ObjectReference MakeObject(const std::string& name) {
    auto created = client_->Create(
        resources::kConfigMaps, ns_,
        json{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}});
    EXPECT_TRUE(created) << created.error().ToString();
    if (!created) return {};
    const ObjectMeta meta = ParseObjectMeta(*created);
    return {.kind = "ConfigMap",
            .ns = ns_,
            .name = name,
            .uid = meta.uid,
            .api_version = "v1",
            .resource_version = meta.resource_version};
  }

  // The Events about one object, as the API serves them.
  std::vector<json> EventsAbout(const std::string& name) {
    auto page =
        client_->List(resources::kEvents, ns_, {.field_selector = "involvedObject.name=" + name});
    EXPECT_TRUE(page) << page.error().ToString();
    return page ? page->items : std::vector<json>{};
  }
};

TEST_F(EventRecorderApiTest, CreatesAnEventVisibleThroughTheApi) {
  const ObjectReference web = MakeObject("web");
  EventRecorder recorder(*client_, {});
  recorder.Record(web, EventType::kWarning, "ScaleFailed", "could not scale web to 4");
  ASSERT_TRUE(recorder.Flush(seconds(30)));

  const auto events = EventsAbout("web");
  ASSERT_EQ(events.size(), 1U);
  const json& e = events[0];
  EXPECT_TRUE(std::regex_match(e["metadata"]["name"].get<std::string>(),
                               std::regex(R"(web\.[0-9a-f]{16})")))
      << e["metadata"]["name"];
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_EQ(e["reason"], "ScaleFailed");
  EXPECT_EQ(e["message"], "could not scale web to 4");
  EXPECT_EQ(e["count"], 1);
  EXPECT_EQ(e["source"]["component"], "eoc-controller");
  EXPECT_EQ(e["reportingComponent"], "eoc-controller");
  EXPECT_EQ(e["involvedObject"]["kind"], "ConfigMap");
  EXPECT_EQ(e["involvedObject"]["uid"], web.uid);
  EXPECT_EQ(e["involvedObject"]["apiVersion"], "v1");
  EXPECT_EQ(e["firstTimestamp"], e["lastTimestamp"]);
  const auto stats = recorder.stats();
  EXPECT_EQ(stats.written, 1U);
  EXPECT_EQ(stats.aggregated, 0U);
  EXPECT_EQ(stats.dropped, 0U);
}

TEST_F(EventRecorderApiTest, RepeatBumpsCountOnTheSameEvent) {
  const ObjectReference web = MakeObject("web");
  EventRecorder recorder(*client_, {});
  recorder.Record(web, EventType::kNormal, "Scaled", "scaled web to 2");
  ASSERT_TRUE(recorder.Flush(seconds(30)));
  const auto first = EventsAbout("web");
  ASSERT_EQ(first.size(), 1U);

  recorder.Record(web, EventType::kNormal, "Scaled", "scaled web to 2");
  ASSERT_TRUE(recorder.Flush(seconds(30)));
  const auto events = EventsAbout("web");
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0]["metadata"]["name"], first[0]["metadata"]["name"]);
  EXPECT_EQ(events[0]["count"], 2);
  EXPECT_EQ(events[0]["firstTimestamp"], first[0]["firstTimestamp"]);
  EXPECT_GE(events[0]["lastTimestamp"].get<std::string>(),
            events[0]["firstTimestamp"].get<std::string>());
  EXPECT_EQ(recorder.stats().aggregated, 1U);

  // Another message is another Event.
  recorder.Record(web, EventType::kNormal, "Scaled", "scaled web to 3");
  ASSERT_TRUE(recorder.Flush(seconds(30)));
  EXPECT_EQ(EventsAbout("web").size(), 2U);
}

TEST_F(EventRecorderApiTest, EventsForTwoObjectsStaySeparate) {
  const ObjectReference web = MakeObject("web");
  const ObjectReference api = MakeObject("api");
  EventRecorder recorder(*client_, {});
  recorder.Record(web, EventType::kNormal, "Ready", "all workers ready");
  recorder.Record(api, EventType::kNormal, "Ready", "all workers ready");
  recorder.Record(web, EventType::kNormal, "Ready", "all workers ready");
  ASSERT_TRUE(recorder.Flush(seconds(30)));

  const auto web_events = EventsAbout("web");
  const auto api_events = EventsAbout("api");
  ASSERT_EQ(web_events.size(), 1U);
  ASSERT_EQ(api_events.size(), 1U);
  EXPECT_EQ(web_events[0]["count"], 2);
  EXPECT_EQ(api_events[0]["count"], 1);
  EXPECT_EQ(api_events[0]["involvedObject"]["uid"], api.uid);
  EXPECT_NE(web_events[0]["metadata"]["name"], api_events[0]["metadata"]["name"]);
}

TEST_F(EventRecorderApiTest, LongMessagesAreCutTo1KiB) {
  const ObjectReference web = MakeObject("web");
  EventRecorder recorder(*client_, {});
  recorder.Record(web, EventType::kWarning, "Noisy", std::string(5000, 'x'));
  ASSERT_TRUE(recorder.Flush(seconds(30)));
  const auto events = EventsAbout("web");
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0]["message"].get<std::string>().size(), 1024U);
}

}  // namespace
}  // namespace eoc::kube
