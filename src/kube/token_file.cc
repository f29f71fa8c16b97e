#include "kube/token_file.h"

#include <string_view>

#include "common/files.h"
#include "common/text.h"

namespace eoc::kube {

std::optional<std::string> ReadTokenFile(const std::string& path, std::string* error) {
  std::optional<std::string> text = ReadFileLimited(path, kMaxTokenFileBytes, error);
  if (!text) return std::nullopt;
  const std::string_view token = TrimWhitespace(*text);
  if (token.empty()) {
    *error = "the file is empty";
    return std::nullopt;
  }
  return std::string(token);
}

}  // namespace eoc::kube
