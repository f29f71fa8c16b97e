// Reads InferencePool.spec field by field, in the order of the fields, with every default applied.
// Internal to src/api: ParseInferencePool is the public way in.
//
//   std::vector<eoc::api::FieldError> errors;
//   eoc::api::InferencePoolSpec spec = eoc::api::internal::ParseSpec(&object["spec"], errors);
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "api/inference_pool.h"

namespace eoc::api::internal {

// `spec` may be nullptr (absent). Each problem is appended to `errors`, naming its field; a field
// in error keeps its default. Cross-field rules are Validate()'s.
InferencePoolSpec ParseSpec(const nlohmann::json* spec, std::vector<FieldError>& errors);

}  // namespace eoc::api::internal
