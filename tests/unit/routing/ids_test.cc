#include "routing/ids.h"

#include <gtest/gtest.h>

namespace eoc::routing {
namespace {

TEST(IdsTest, KeysAreStableAndDistinct) {
  EXPECT_EQ(WorkerKeyOf("prod/vllm-0"), WorkerKeyOf("prod/vllm-0"));
  EXPECT_NE(WorkerKeyOf("prod/vllm-0"), WorkerKeyOf("prod/vllm-1"));
  EXPECT_NE(SessionHashOf("a"), SessionHashOf("b"));
  // XXH64 of the empty input with seed 0, as every implementation gives it.
  EXPECT_EQ(SessionHashOf(""), 0xEF46DB3751D8E999ULL);
}

}  // namespace
}  // namespace eoc::routing
