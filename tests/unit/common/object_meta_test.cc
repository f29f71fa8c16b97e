// The one reader of JSON members and object metadata (common/json_members.h, object_meta.h).
#include "common/object_meta.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/json_members.h"

namespace eoc {
namespace {

using nlohmann::json;

std::string ShapeErrorOf(const json& object) {
  try {
    (void)ParseObjectMeta(object);
  } catch (const JsonShapeError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no JsonShapeError for " << object.dump();
  return "";
}

TEST(MemberOrNull, NullAbsentAndNonObjectsReadAsNothing) {
  const json doc = {{"a", 1}, {"n", nullptr}, {"o", {{"b", "x"}}}};
  ASSERT_NE(MemberOrNull(doc, "a"), nullptr);
  EXPECT_EQ(*MemberOrNull(doc, "a"), 1);
  EXPECT_EQ(MemberOrNull(doc, "n"), nullptr);
  EXPECT_EQ(MemberOrNull(doc, "missing"), nullptr);
  EXPECT_EQ(MemberOrNull(json::array({1}), "a"), nullptr);
  EXPECT_EQ(MemberOrNull(nullptr, "a"), nullptr);
  // Lookups chain through absent members.
  EXPECT_EQ(*MemberOrNull(MemberOrNull(doc, "o"), "b"), "x");
  EXPECT_EQ(MemberOrNull(MemberOrNull(doc, "missing"), "b"), nullptr);
}

TEST(StringOrEmpty, OnlyStrings) {
  const json doc = {{"s", "text"}, {"i", 5}, {"n", nullptr}};
  EXPECT_EQ(StringOrEmpty(doc, "s"), "text");
  EXPECT_EQ(StringOrEmpty(doc, "i"), "");
  EXPECT_EQ(StringOrEmpty(doc, "n"), "");
  EXPECT_EQ(StringOrEmpty(nullptr, "s"), "");
}

TEST(OptionalString, AWrongTypeNamesTheField) {
  const json doc = {{"s", "text"}, {"i", 5}};
  EXPECT_EQ(OptionalString(doc, "s", "spec"), "text");
  EXPECT_EQ(OptionalString(doc, "absent", "spec"), "");
  EXPECT_THROW(
      {
        try {
          (void)OptionalString(doc, "i", "spec");
        } catch (const JsonShapeError& e) {
          EXPECT_STREQ(e.what(), "spec.i: expected a string");
          throw;
        }
      },
      JsonShapeError);
}

TEST(ParseObjectMeta, ReadsEveryField) {
  const ObjectMeta meta = ParseObjectMeta(json::parse(R"({"metadata": {
      "name": "web", "namespace": "prod", "uid": "u-1", "resourceVersion": "42",
      "generation": 3, "labels": {"app": "vllm"}, "annotations": {"eoc.dev/models": "m"},
      "deletionTimestamp": "2030-01-01T00:00:00Z"}})"));
  EXPECT_EQ(meta.name, "web");
  EXPECT_EQ(meta.ns, "prod");
  EXPECT_EQ(meta.uid, "u-1");
  EXPECT_EQ(meta.resource_version, "42");
  EXPECT_EQ(meta.generation, 3);
  EXPECT_EQ(meta.labels, (std::map<std::string, std::string>{{"app", "vllm"}}));
  EXPECT_EQ(meta.annotations, (std::map<std::string, std::string>{{"eoc.dev/models", "m"}}));
  EXPECT_EQ(meta.deletion_timestamp, "2030-01-01T00:00:00Z");
}

TEST(ParseObjectMeta, ErrorsNameTheField) {
  EXPECT_EQ(ShapeErrorOf(json::object()), "metadata: missing");
  EXPECT_EQ(ShapeErrorOf({{"metadata", "x"}}), "metadata: missing");
  EXPECT_EQ(ShapeErrorOf({{"metadata", {{"namespace", "a"}}}}), "metadata.name: missing");
  EXPECT_EQ(ShapeErrorOf({{"metadata", {{"name", 5}}}}), "metadata.name: expected a string");
  EXPECT_EQ(ShapeErrorOf({{"metadata", {{"name", "a"}, {"generation", "1"}}}}),
            "metadata.generation: expected an integer");
  EXPECT_EQ(ShapeErrorOf({{"metadata", {{"name", "a"}, {"labels", {{"app", 1}}}}}}),
            "metadata.labels[\"app\"]: expected a string");
  EXPECT_EQ(ShapeErrorOf({{"metadata", {{"name", "a"}, {"annotations", "x"}}}}),
            "metadata.annotations: expected an object");
  EXPECT_EQ(ShapeErrorOf({{"metadata", {{"name", "a"}, {"deletionTimestamp", 1}}}}),
            "metadata.deletionTimestamp: expected a string");
}

TEST(ReadObjectMetaLenient, WrongTypesReadAsEmpty) {
  const ObjectMeta meta = ReadObjectMetaLenient(
      {{"metadata",
        {{"name", "web"}, {"namespace", 5}, {"generation", "x"}, {"labels", {{"app", 1}}}}}});
  EXPECT_EQ(meta.name, "web");
  EXPECT_EQ(meta.ns, "");
  EXPECT_EQ(meta.generation, 0);
  EXPECT_TRUE(meta.labels.empty());
  EXPECT_EQ(ReadObjectMetaLenient(json("text")).name, "");
  EXPECT_EQ(ReadObjectMetaLenient({{"metadata", {{"name", 5}}}}).name, "");
}

TEST(ResourceVersionOf, EmptyUnlessAString) {
  EXPECT_EQ(ResourceVersionOf({{"metadata", {{"resourceVersion", "7"}}}}), "7");
  EXPECT_EQ(ResourceVersionOf({{"metadata", {{"resourceVersion", 7}}}}), "");
  EXPECT_EQ(ResourceVersionOf({{"metadata", "x"}}), "");
  EXPECT_EQ(ResourceVersionOf(json::array()), "");
}

}  // namespace
}  // namespace eoc
