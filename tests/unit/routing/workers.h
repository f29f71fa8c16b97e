// The workers the routing tests build pools of: worker i is pod "prod/vllm-i" at 10.0.0.i:8000,
// with a maximum concurrency of 100.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "routing/ids.h"
#include "routing/worker.h"

namespace eoc::routing::testing {

inline std::string PodOf(int i) { return "prod/vllm-" + std::to_string(i); }
inline WorkerKey KeyOf(int i) { return WorkerKeyOf(PodOf(i)); }

inline Worker MakeWorker(int i, std::int32_t weight = 1000, std::vector<std::string> models = {}) {
  return Worker{.key = KeyOf(i),
                .pod = PodOf(i),
                .address = "10.0.0." + std::to_string(i) + ":8000",
                .capability = {.models = std::move(models), .max_concurrency = 100},
                .weight = weight};
}

inline std::vector<Worker> Workers(int n, std::int32_t weight = 1000) {
  std::vector<Worker> workers;
  workers.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) workers.push_back(MakeWorker(i, weight));
  return workers;
}

}  // namespace eoc::routing::testing
