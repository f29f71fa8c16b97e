// Where the simulator's tests find the real traces and energy profiles: the `shared/` folder
// beside the repository (CI lays a copy there too), whose path CMake passes in as EOC_SHARED_DIR.
// A user's checkout without it skips the tests that read it, saying so.
//
//   const std::string path = SharedFile("traces/azure-llm-2023-code.csv");
//   if (path.empty()) GTEST_SKIP() << NoSharedFile("traces/azure-llm-2023-code.csv");
#pragma once

#include <filesystem>
#include <string>
#include <system_error>

namespace eoc::sim::testing {

// EOC_SHARED_DIR/`relative` when it is a file there; "" otherwise.
inline std::string SharedFile(const std::string& relative) {
  const std::filesystem::path path = std::filesystem::path(EOC_SHARED_DIR) / relative;
  std::error_code error;
  return std::filesystem::is_regular_file(path, error) ? path.string() : std::string();
}

inline std::string NoSharedFile(const std::string& relative) {
  return "no " + relative + " in " + EOC_SHARED_DIR + " (the shared/ folder beside the repository)";
}

}  // namespace eoc::sim::testing
