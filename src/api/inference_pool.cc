#include "api/inference_pool.h"

#include <set>
#include <stdexcept>
#include <utility>

#include "api/enum_names.h"
#include "api/json_reader.h"
#include "api/spec_parser.h"
#include "common/object_meta.h"

namespace eoc::api {
namespace {

using nlohmann::json;

// A SpecValid message names a few problems, not thousands.
constexpr std::size_t kMaxErrors = 32;

// Drops repeated errors (keeping the first of each) and cuts a long list short, its last entry
// saying how many more there were.
std::vector<FieldError> Tidy(std::vector<FieldError> errors) {
  std::vector<FieldError> out;
  std::set<std::pair<std::string, std::string>> seen;
  std::size_t more = 0;
  for (FieldError& e : errors) {
    if (!seen.emplace(e.field, e.message).second) continue;
    if (out.size() < kMaxErrors) {
      out.push_back(std::move(e));
    } else {
      ++more;
    }
  }
  if (more > 0) {
    out.back() = {"spec", std::to_string(more + 1) + " more errors not listed"};
  }
  return out;
}

}  // namespace

std::string_view ToString(Engine value) {
  return internal::EnumToString(value, internal::kEngineNames);
}
std::string_view ToString(MetricsAccess value) {
  return internal::EnumToString(value, internal::kMetricsAccessNames);
}
std::string_view ToString(ScalingMode value) {
  return internal::EnumToString(value, internal::kScalingModeNames);
}
std::string_view ToString(EnergySource value) {
  return internal::EnumToString(value, internal::kEnergySourceNames);
}

InferencePool ParseInferencePool(const json& object) {
  // Lenient: only a missing name refuses the object; its spec's errors are reported in status.
  ObjectMeta meta = ReadObjectMetaLenient(object);
  if (meta.name.empty()) throw std::invalid_argument("InferencePool object without metadata.name");
  InferencePool pool;
  pool.name = std::move(meta.name);
  pool.ns = std::move(meta.ns);
  pool.uid = std::move(meta.uid);
  pool.generation = meta.generation;
  std::vector<FieldError> errors;
  pool.spec = internal::ParseSpec(MemberOrNull(&object, "spec"), errors);
  // Cross-field rules only on a spec whose every field was readable: a field in error holds its
  // default, which would make them report problems the object does not have.
  if (errors.empty()) errors = Validate(pool.spec);
  pool.errors = Tidy(std::move(errors));
  if (const json* status = MemberOrNull(&object, "status")) pool.status = ParseStatus(*status);
  return pool;
}

}  // namespace eoc::api
