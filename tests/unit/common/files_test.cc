#include "common/files.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include "files.h"

namespace eoc {
namespace {

TEST(ReadFileLimited, ReadsWithinTheBoundAndSaysWhyNot) {
  const testing::TempDir dir;
  std::string error;
  EXPECT_EQ(ReadFileLimited(dir.Write("f", "12345"), 5, &error), "12345");
  EXPECT_FALSE(ReadFileLimited(dir.Path("f"), 4, &error).has_value());
  EXPECT_EQ(error, "larger than 4 bytes");
  EXPECT_FALSE(ReadFileLimited(dir.Path("missing"), 4, &error).has_value());
  EXPECT_EQ(error, "No such file or directory");
  EXPECT_FALSE(ReadFileLimited("/dev/null", 4, &error).has_value());
  EXPECT_EQ(error, "not a regular file");
  EXPECT_FALSE(ReadFileLimited(dir.Path(""), 4, &error).has_value());  // the folder itself
  EXPECT_EQ(error, "not a regular file");
}

TEST(IsMissingFile, OnlyWhenNothingIsThere) {
  const testing::TempDir dir;
  EXPECT_FALSE(IsMissingFile(dir.Write("f", "x")));
  EXPECT_FALSE(IsMissingFile(dir.Path("")));
  EXPECT_TRUE(IsMissingFile(dir.Path("absent")));
}

TEST(Fd, ClosesOnScopeExitAndMoves) {
  int raw = -1;
  {
    Fd a(::dup(0));
    raw = a.get();
    ASSERT_GE(raw, 0);
    Fd b(std::move(a));
    EXPECT_EQ(b.get(), raw);
  }
  EXPECT_EQ(::fcntl(raw, F_GETFD), -1);  // closed
}

}  // namespace
}  // namespace eoc
