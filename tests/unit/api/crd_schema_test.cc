// crds/eoc.dev_inferencepools.yaml against the code: its defaults are the table's constants, its
// enums and bounds are what the parser accepts, and its status schema holds all that ToJson
// writes (the API server prunes anything else).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "api/defaults.h"
#include "api/inference_pool.h"
#include "api/spec_parser.h"
#include "common/yaml_json.h"
#include "printers.h"
#include "yaml_file.h"

namespace eoc::api {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;

const json& Crd() {
  static const json crd = testing::LoadYaml(EOC_CRDS_DIR "/eoc.dev_inferencepools.yaml");
  return crd;
}
const json& Version() { return Crd()["spec"]["versions"][0]; }
const json& Schema() { return Version()["schema"]["openAPIV3Schema"]; }

// Calls `visit` on every schema node under `node`, with its path: ".name" for a property, "[]"
// for array items, "[*]" for the values of a map.
void Walk(const json& node, const std::string& path,
          const std::function<void(const std::string&, const json&)>& visit) {
  visit(path, node);
  if (node.contains("properties")) {
    for (const auto& [name, child] : node["properties"].items()) {
      std::string child_path = path;
      if (!child_path.empty()) child_path += ".";
      child_path += name;
      Walk(child, child_path, visit);
    }
  }
  if (node.contains("items")) Walk(node["items"], path + "[]", visit);
  if (node.contains("additionalProperties") && node["additionalProperties"].is_object()) {
    Walk(node["additionalProperties"], path + "[*]", visit);
  }
}

void WalkSpec(const std::function<void(const std::string&, const json&)>& visit) {
  Walk(Schema()["properties"]["spec"], "", visit);
}

const DefaultRow* Row(const std::string& field) {
  for (const DefaultRow& row : DefaultsTable()) {
    if (row.field == field) return &row;
  }
  return nullptr;
}

bool SameValue(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  return a == b;
}

TEST(Crd, NamesVersionAndColumns) {
  const json& spec = Crd()["spec"];
  EXPECT_EQ(Crd()["apiVersion"], "apiextensions.k8s.io/v1");
  EXPECT_EQ(Crd()["metadata"]["name"], std::string(kPlural) + "." + std::string(kGroup));
  EXPECT_EQ(spec["group"], kGroup);
  EXPECT_EQ(spec["names"]["kind"], kKind);
  EXPECT_EQ(spec["names"]["plural"], kPlural);
  EXPECT_EQ(spec["names"]["singular"], "inferencepool");
  EXPECT_EQ(spec["names"]["shortNames"], json::array({"eocpool"}));
  EXPECT_EQ(spec["scope"], "Namespaced");
  ASSERT_EQ(spec["versions"].size(), 1U);
  EXPECT_EQ(Version()["name"], kVersion);
  EXPECT_EQ(Version()["served"], true);
  EXPECT_EQ(Version()["storage"], true);
  EXPECT_EQ(Version()["subresources"]["status"], json::object());
  std::vector<std::string> columns;
  for (const json& c : Version()["additionalPrinterColumns"]) {
    columns.push_back(c["name"].get<std::string>() + " " + c["jsonPath"].get<std::string>());
  }
  EXPECT_THAT(columns,
              ElementsAre("Ready .status.readyWorkers", "Desired .status.desiredReplicas",
                          "Strategy .spec.routing.strategy", "Age .metadata.creationTimestamp"));
  EXPECT_EQ(Schema()["properties"]["spec"]["required"], json::array({"selector", "targetPort"}));
}

TEST(Crd, NoCelSoThatItAppliesOnKubernetes120) {
  EXPECT_EQ(Crd().dump().find("x-kubernetes-validations"), std::string::npos);
}

TEST(Crd, SchemaDefaultsAreTheTablesConstants) {
  std::set<std::string> defaulted;
  std::map<std::string, json> nodes;
  WalkSpec([&](const std::string& path, const json& node) {
    nodes[path] = node;
    if (!node.contains("default")) return;
    const json& value = node["default"];
    if (value.is_object()) {
      EXPECT_EQ(value, json::object()) << path << ": an object's default must be {}";
      return;
    }
    defaulted.insert(path);
    const DefaultRow* row = Row(path);
    ASSERT_NE(row, nullptr) << path << " has a schema default but no row in the table";
    EXPECT_TRUE(row->constant) << path << " depends on other fields: no schema default";
    EXPECT_TRUE(SameValue(value, YamlToJson(YAML::Load(row->value))))
        << path << ": schema " << value << ", table " << row->value;
  });
  std::set<std::string> constants;
  for (const DefaultRow& row : DefaultsTable()) {
    if (row.constant) constants.insert(row.field);
  }
  EXPECT_EQ(defaulted, constants);
  // Each object on the way to a default defaults to {}, so that the API server applies it also
  // when the section is left out, as the parser does.
  for (const std::string& path : defaulted) {
    for (std::size_t dot = path.find('.'); dot != std::string::npos;
         dot = path.find('.', dot + 1)) {
      EXPECT_EQ(nodes[path.substr(0, dot)].value("default", json()), json::object())
          << path.substr(0, dot);
    }
  }
}

// Where the value of a field at `path` goes in a spec, and the field an error about it names.
struct Placement {
  json spec;
  std::string error_field;
};

// Puts `value` at `path` (a schema path) in a minimal spec that is otherwise good. Array items
// and map values go into a one-entry list or map.
std::optional<Placement> Place(const std::string& path, const json& value) {
  Placement p{json::parse(R"({"selector": {"matchLabels": {"app": "x"}}, "targetPort": 8000})"),
              "spec." + path};
  if (path.starts_with("energy.profiles[].")) {
    const std::string field = path.substr(std::string("energy.profiles[].").size());
    json profile = {
        {"accelerator", "A"}, {"idleWatts", 0}, {"maxWatts", 0}, {"maxTokensPerSecond", 1}};
    profile[field] = value;
    p.spec["energy"]["profiles"] = json::array({profile});
    p.error_field = "spec.energy.profiles[0]." + field;
    return p;
  }
  if (path == "carbon.static[*]") {
    p.spec["carbon"]["static"] = {{"eu", value}};
    p.error_field = "spec.carbon.static[eu]";
    return p;
  }
  if (path.find('[') != std::string::npos) return std::nullopt;  // selector internals
  std::string pointer = "/" + path;
  std::replace(pointer.begin(), pointer.end(), '.', '/');
  p.spec[json::json_pointer(pointer)] = value;
  return p;
}

// The errors that the parser gives for `value` at `path`, which name that field.
std::vector<FieldError> ErrorsFor(const std::string& path, const json& value) {
  std::optional<Placement> p = Place(path, value);
  if (!p) return {};
  std::vector<FieldError> errors;
  (void)internal::ParseSpec(&p->spec, errors);
  std::vector<FieldError> about;
  for (FieldError& e : errors) {
    if (e.field == p->error_field) about.push_back(std::move(e));
  }
  return about;
}

TEST(Crd, SpecEnumsAreWhatTheParserAccepts) {
  int enums = 0;
  WalkSpec([&](const std::string& path, const json& node) {
    if (!node.contains("enum") || !Place(path, "x")) return;
    ++enums;
    std::string names;
    for (const json& value : node["enum"]) {
      EXPECT_THAT(ErrorsFor(path, value), ::testing::IsEmpty()) << path << " = " << value;
      names += (names.empty() ? "" : ", ") + value.get<std::string>();
    }
    EXPECT_THAT(ErrorsFor(path, "no-such-value"),
                ElementsAre(FieldError{"spec." + path,
                                       "must be one of " + names + ", got \"no-such-value\""}));
  });
  EXPECT_EQ(enums, 5);  // engine, metrics.access, autoscaling.mode, routing.strategy, energy.source
}

TEST(Crd, SpecBoundsAreWhatTheParserChecks) {
  int bounded = 0;
  WalkSpec([&](const std::string& path, const json& node) {
    if (!Place(path, 0)) return;
    const std::string type = node.value("type", "");
    const bool integer = type == "integer";
    if (node.contains("minimum")) {
      ++bounded;
      const double min = node["minimum"].get<double>();
      const bool exclusive = node.value("exclusiveMinimum", false);
      if (!exclusive) {
        EXPECT_THAT(ErrorsFor(path, min), ::testing::IsEmpty()) << path;
      }
      const json below = exclusive ? json(min) : integer ? json(min - 1) : json(min - 0.5);
      EXPECT_THAT(ErrorsFor(path, below), ::testing::SizeIs(1)) << path << " = " << below;
      if (exclusive) {
        EXPECT_THAT(ErrorsFor(path, min + 0.001), ::testing::IsEmpty()) << path;
      }
    }
    if (node.contains("maximum")) {
      ++bounded;
      const double max = node["maximum"].get<double>();
      EXPECT_THAT(ErrorsFor(path, max), ::testing::IsEmpty()) << path;
      const json above = integer ? json(max + 1) : json(max + 0.5);
      EXPECT_THAT(ErrorsFor(path, above), ::testing::SizeIs(1)) << path << " = " << above;
    }
    if (node.contains("maxLength") && !path.ends_with("[*]")) {
      ++bounded;
      const std::string longer(node["maxLength"].get<std::size_t>() + 1, 'a');
      EXPECT_THAT(ErrorsFor(path, longer),
                  ElementsAre(FieldError{Place(path, 0)->error_field,
                                         "must be at most " + std::to_string(longer.size() - 1) +
                                             " characters, got " + std::to_string(longer.size())}))
          << path;
    }
    for (const char* limit : {"maxItems", "maxProperties"}) {
      if (!node.contains(limit)) continue;
      ++bounded;
      const std::size_t max = node[limit].get<std::size_t>();
      json big = std::string(limit) == "maxItems" ? json::array() : json::object();
      for (std::size_t i = 0; i <= max; ++i) {
        if (big.is_array()) {
          big.push_back(nullptr);
        } else {
          big["k" + std::to_string(i)] = nullptr;
        }
      }
      EXPECT_THAT(
          ErrorsFor(path, big),
          ElementsAre(FieldError{"spec." + path, "must have at most " + std::to_string(max) +
                                                     " entries, got " + std::to_string(max + 1)}));
    }
  });
  EXPECT_GT(bounded, 60);
}

// Every member of `value` is in `schema`, with the schema's type.
void ExpectDescribed(const json& value, const json& schema, const std::string& path) {
  const std::string type = schema.value("type", "");
  if (value.is_object()) {
    ASSERT_EQ(type, "object") << path;
    for (const auto& [key, member] : value.items()) {
      ASSERT_TRUE(schema.contains("properties") && schema["properties"].contains(key))
          << path << "." << key << " is not in the schema: the API server would prune it";
      std::string member_path = path;
      member_path += ".";
      member_path += key;
      ExpectDescribed(member, schema["properties"][key], member_path);
    }
    for (const json& required : schema.value("required", json::array())) {
      EXPECT_TRUE(value.contains(required.get<std::string>())) << path << "." << required;
    }
  } else if (value.is_array()) {
    ASSERT_EQ(type, "array") << path;
    for (const json& item : value) ExpectDescribed(item, schema["items"], path + "[]");
  } else if (value.is_boolean()) {
    EXPECT_EQ(type, "boolean") << path;
  } else if (value.is_number_integer()) {
    EXPECT_EQ(type, "integer") << path;
  } else if (value.is_string()) {
    EXPECT_EQ(type, "string") << path;
    if (schema.contains("enum")) {
      EXPECT_THAT(schema["enum"], ::testing::Contains(value)) << path;
    }
  } else {
    ADD_FAILURE() << path << ": unexpected " << value;
  }
}

TEST(Crd, StatusSchemaHoldsAllThatToJsonWrites) {
  InferencePoolStatus status;
  status.observed_generation = 4;
  status.ready_workers = 2;
  status.desired_replicas = 3;
  status.last_scale_time = "2026-11-30T10:00:00Z";
  status.conditions = {{"Ready", "True", "Serving", "2 workers", "2026-11-30T10:00:00Z", 4},
                       {"SpecValid", "Unknown", "", "", "2026-11-30T10:00:00Z", 0}};
  status.routing = RoutingTable{
      "JouleWeighted", 17, {{"w-0", "10.0.0.1:8000", 1000, true, 4096, 16, {"llama", "qwen"}}}};
  ExpectDescribed(ToJson(status), Schema()["properties"]["status"], "status");
  const json& conditions = Schema()["properties"]["status"]["properties"]["conditions"];
  EXPECT_EQ(conditions["x-kubernetes-list-type"], "map");
  EXPECT_EQ(conditions["x-kubernetes-list-map-keys"], json::array({"type"}));
  EXPECT_EQ(Schema()["properties"]["status"]["properties"]["routing"]["properties"]["workers"]
                    ["maxItems"],
            kMaxRoutingTableWorkers);
}

}  // namespace
}  // namespace eoc::api
