// Files for tests: a temporary folder that cleans up after itself, and whole-file reads.
//
//   eoc::testing::TempDir dir;
//   std::string path = dir.Write("sub/config", "apiVersion: v1\n");
//   EXPECT_EQ(eoc::testing::ReadFile(path), "apiVersion: v1\n");
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace eoc::testing {

// A fresh folder, removed with everything in it when the test ends.
class TempDir {
 public:
  TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  TempDir(TempDir&&) = delete;
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir();

  std::string Path(const std::string& name) const { return (path_ / name).string(); }
  // Writes `content` to `name` (folders created as needed) and returns its path.
  std::string Write(const std::string& name, std::string_view content) const;

 private:
  std::filesystem::path path_;
};

// Reads a whole file; throws std::runtime_error naming it when it cannot.
std::string ReadFile(const std::string& path);

}  // namespace eoc::testing
