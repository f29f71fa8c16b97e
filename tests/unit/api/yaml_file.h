// A YAML file of the repository (the CRD, its samples) as the JSON kubectl would send, for tests:
// eoc::LoadYamlFile, throwing what it says when the file cannot be read.
//
//   const nlohmann::json sample = testing::LoadYaml(EOC_CRDS_DIR "/samples/vllm-pool.yaml");
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/yaml_json.h"

namespace eoc::api::testing {

inline nlohmann::json LoadYaml(const std::string& path) {
  std::string error;
  std::optional<nlohmann::json> doc = LoadYamlFile(path, std::size_t{16} << 20U, error);
  if (!doc) throw std::runtime_error(error);
  return *std::move(doc);
}

}  // namespace eoc::api::testing
