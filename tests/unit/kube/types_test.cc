#include "kube/types.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kube/json_limits.h"

namespace eoc::kube {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(ResourceRef, Paths) {
  EXPECT_EQ(resources::kPods.CollectionPath("default"), "/api/v1/namespaces/default/pods");
  EXPECT_EQ(resources::kPods.CollectionPath(""), "/api/v1/pods");
  EXPECT_EQ(resources::kDeployments.ObjectPath("ns1", "web", "scale"),
            "/apis/apps/v1/namespaces/ns1/deployments/web/scale");
  EXPECT_EQ(resources::kNodes.ObjectPath("ignored", "node-1"), "/api/v1/nodes/node-1");
  EXPECT_EQ(resources::kDeployments.QualifiedName(), "deployments.apps");
  EXPECT_EQ(resources::kDeployments.GroupVersion(), "apps/v1");
  EXPECT_EQ(resources::kPods.GroupVersion(), "v1");
}

TEST(ResourceRef, NamesCannotEscapeTheirSegment) {
  EXPECT_EQ(resources::kPods.ObjectPath("default", "../../secrets/x"),
            "/api/v1/namespaces/default/pods/..%2F..%2Fsecrets%2Fx");
}

TEST(PercentEncode, SelectorCharacters) {
  EXPECT_EQ(PercentEncode("app=web,tier!=db"), "app%3Dweb%2Ctier%21%3Ddb");
  EXPECT_EQ(PercentEncode("a-b_c.d~e"), "a-b_c.d~e");
  EXPECT_EQ(PercentEncode("x in (a, b)"), "x%20in%20%28a%2C%20b%29");
}

TEST(ParseObjectMeta, ReadsFields) {
  const json pod = json::parse(R"({"metadata":{"name":"p","namespace":"ns","uid":"u-1",
      "resourceVersion":"42","generation":3,"labels":{"app":"web"},"annotations":{"a":"b"},
      "deletionTimestamp":"2026-11-30T10:00:00Z"}})");
  const ObjectMeta m = ParseObjectMeta(pod);
  EXPECT_EQ(m.name, "p");
  EXPECT_EQ(m.ns, "ns");
  EXPECT_EQ(m.uid, "u-1");
  EXPECT_EQ(m.resource_version, "42");
  EXPECT_EQ(m.generation, 3);
  EXPECT_EQ(m.labels.at("app"), "web");
  EXPECT_EQ(m.annotations.at("a"), "b");
  EXPECT_EQ(m.deletion_timestamp, "2026-11-30T10:00:00Z");
}

TEST(ParseObjectMeta, ErrorsNameTheField) {
  EXPECT_THROW(
      {
        try {
          ParseObjectMeta(json::parse(R"({"kind":"Pod"})"));
        } catch (const MappingError& e) {
          EXPECT_STREQ(e.what(), "metadata: missing");
          throw;
        }
      },
      MappingError);
  try {
    ParseObjectMeta(json::parse(R"({"metadata":{"name":"p","labels":{"a":1}}})"));
    FAIL() << "expected MappingError";
  } catch (const MappingError& e) {
    EXPECT_THAT(e.what(), HasSubstr("metadata.labels[\"a\"]: expected a string"));
  }
  try {
    ParseObjectMeta(json::parse(R"({"metadata":{"name":5}})"));
    FAIL() << "expected MappingError";
  } catch (const MappingError& e) {
    EXPECT_THAT(e.what(), HasSubstr("metadata.name: expected a string"));
  }
}

TEST(ParseListPage, MovesItemsAndPaging) {
  json list = json::parse(R"({"kind":"PodList","metadata":{"resourceVersion":"100",
      "continue":"tok","remainingItemCount":7},"items":[{"metadata":{"name":"a"}},
      {"metadata":{"name":"b"}}]})");
  const ListPage page = ParseListPage(std::move(list));
  ASSERT_EQ(page.items.size(), 2U);
  EXPECT_EQ(page.items[1]["metadata"]["name"], "b");
  EXPECT_EQ(page.resource_version, "100");
  EXPECT_EQ(page.continue_token, "tok");
  EXPECT_EQ(page.remaining_item_count, 7);
}

TEST(ParseListPage, EmptyListMayOmitItems) {
  const ListPage page = ParseListPage(json::parse(R"({"metadata":{"resourceVersion":"5"}})"));
  EXPECT_TRUE(page.items.empty());
  EXPECT_EQ(page.resource_version, "5");
  EXPECT_THROW(ParseListPage(json::parse(R"({"items":{}})")), MappingError);
}

TEST(ParseScale, ReadsSpecAndStatus) {
  const Scale s = ParseScale(json::parse(R"({"kind":"Scale","apiVersion":"autoscaling/v1",
      "metadata":{"name":"web","namespace":"default","resourceVersion":"9"},
      "spec":{"replicas":5},"status":{"replicas":3,"selector":"app=web"}})"));
  EXPECT_EQ(s.metadata.name, "web");
  EXPECT_EQ(s.spec_replicas, 5);
  EXPECT_EQ(s.status_replicas, 3);
  EXPECT_EQ(s.selector, "app=web");
}

TEST(ParseScale, ZeroReplicasMayBeOmittedButNotMistyped) {
  const Scale s = ParseScale(json::parse(R"({"metadata":{"name":"w"},"spec":{},"status":{}})"));
  EXPECT_EQ(s.spec_replicas, 0);
  EXPECT_THROW(ParseScale(json::parse(R"({"metadata":{"name":"w"},"spec":{"replicas":"3"}})")),
               MappingError);
  EXPECT_THROW(ParseScale(json::parse(R"({"metadata":{"name":"w"},"spec":{"replicas":-1}})")),
               MappingError);
}

TEST(ParseWatchEvent, AllTypes) {
  const WatchEvent added =
      ParseWatchEvent(R"({"type":"ADDED","object":{"metadata":{"name":"p"}}})");
  EXPECT_EQ(added.type, WatchEventType::kAdded);
  EXPECT_EQ(added.object["metadata"]["name"], "p");
  EXPECT_EQ(ParseWatchEvent(R"({"type":"MODIFIED","object":{}})").type, WatchEventType::kModified);
  EXPECT_EQ(ParseWatchEvent(R"({"type":"DELETED","object":{}})").type, WatchEventType::kDeleted);
  const WatchEvent bookmark = ParseWatchEvent(
      R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"77"}}})");
  EXPECT_EQ(bookmark.type, WatchEventType::kBookmark);
  EXPECT_EQ(bookmark.object["metadata"]["resourceVersion"], "77");
  const WatchEvent error = ParseWatchEvent(
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})");
  EXPECT_EQ(error.type, WatchEventType::kError);
  EXPECT_STREQ(ToString(error.type), "ERROR");
}

TEST(ParseWatchEvent, MalformedLines) {
  EXPECT_THROW(ParseWatchEvent("not json"), MappingError);
  EXPECT_THROW(ParseWatchEvent(R"({"type":"ADDED"})"), MappingError);
  try {
    ParseWatchEvent(R"({"type":"RESET","object":{}})");
    FAIL() << "expected MappingError";
  } catch (const MappingError& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown type \"RESET\""));
  }
}

// A line nested deeper than kMaxApiJsonDepth is refused as it is parsed; one at the limit reads.
TEST(ParseWatchEvent, LinesNestedTooDeepAreRefused) {
  const auto line = [](std::size_t depth) {
    return R"({"type":"ADDED","object":{"spec":)" + std::string(depth, '[') +
           std::string(depth, ']') + "}}";
  };
  try {
    ParseWatchEvent(line(100'000));
    FAIL() << "expected MappingError";
  } catch (const MappingError& e) {
    EXPECT_STREQ(e.what(), "watch event: nested deeper than 512 levels");
  }
  EXPECT_THROW(ParseWatchEvent(line(kMaxApiJsonDepth - 1)), MappingError);
  EXPECT_EQ(ParseWatchEvent(line(kMaxApiJsonDepth - 2)).type, WatchEventType::kAdded);
}

// An unknown type is quoted short and escaped.
TEST(ParseWatchEvent, AnUnknownTypeIsQuotedShortAndEscaped) {
  try {
    ParseWatchEvent(R"({"type":")" + std::string(1000, 'X') + R"(\n","object":{}})");
    FAIL() << "expected MappingError";
  } catch (const MappingError& e) {
    EXPECT_EQ(std::string(e.what()),
              "watch event.type: unknown type \"" + std::string(100, 'X') + "\"...");
  }
  try {
    ParseWatchEvent(R"({"type":"A\nB","object":{}})");
    FAIL() << "expected MappingError";
  } catch (const MappingError& e) {
    EXPECT_STREQ(e.what(), R"(watch event.type: unknown type "A\x0aB")");
  }
}

}  // namespace
}  // namespace eoc::kube
