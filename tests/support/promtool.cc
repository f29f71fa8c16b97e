#include "promtool.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/files.h"

namespace eoc::testing {

std::string FindPromtool() { return FindExecutable("promtool").value_or(""); }

std::pair<int, std::string> PromtoolCheckMetrics(const std::string& promtool,
                                                 const std::string& text) {
  static std::atomic<int> calls{0};
  const std::filesystem::path output_path =
      std::filesystem::temp_directory_path() /
      ("eoc-promtool-" + std::to_string(getpid()) + "-" + std::to_string(calls++) + ".out");
  const std::string command =
      "'" + promtool + "' check metrics > '" + output_path.string() + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "w");
  if (pipe == nullptr) return {-1, "popen failed"};
  fwrite(text.data(), 1, text.size(), pipe);
  const int status = pclose(pipe);
  std::ifstream file(output_path);
  std::stringstream output;
  output << file.rdbuf();
  std::filesystem::remove(output_path);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output.str()};
}

}  // namespace eoc::testing
