// Hostile input: mutations of real pages and random bytes, with fixed seeds. The parser must not
// crash (the sanitizer builds run this too), must keep no more than the page holds, and must come
// to the same verdict whatever it keeps: a filter changes what is kept, not what is valid.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "fixtures.h"
#include "signals/exposition.h"

namespace eoc::signals {
namespace {

using testing::Fixture;

// A page changed in a few places: bytes replaced, inserted, removed, lines duplicated or cut.
std::string Mutated(const std::string& page, std::mt19937_64& random) {
  static constexpr std::string_view kInteresting = "{}=\",\\\n# \t\r\0\xff_:.+-eE0123456789";
  std::string text = page;
  std::uniform_int_distribution<int> edits(1, 8);
  for (int n = edits(random); n > 0 && !text.empty(); --n) {
    std::uniform_int_distribution<std::size_t> at(0, text.size() - 1);
    const std::size_t pos = at(random);
    const char byte = random() % 2 == 0 ? kInteresting[random() % kInteresting.size()]
                                        : static_cast<char>(random() % 256);
    switch (random() % 5) {
      case 0:
        text[pos] = byte;
        break;
      case 1:
        text.insert(pos, 1, byte);
        break;
      case 2:
        text.erase(pos, 1 + random() % 16);
        break;
      case 3: {  // a line repeated
        const std::size_t start = text.rfind('\n', pos);
        const std::size_t end = text.find('\n', pos);
        const std::size_t from = start == std::string::npos ? 0 : start + 1;
        if (end != std::string::npos) text.insert(from, text.substr(from, end - from + 1));
        break;
      }
      default:
        text.resize(pos);  // cut short
        break;
    }
  }
  return text;
}

std::size_t Lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
}

void Check(const std::string& text, const FamilyFilter& keep) {
  const ParseResult all = ParseExposition(text);
  const ParseResult some = ParseExposition(text, {.keep = keep});
  ASSERT_EQ(all.ok(), some.ok()) << (all.ok() ? some.error() : all.error()).ToString();
  if (!all.ok()) {
    EXPECT_EQ(all.error().ToString(), some.error().ToString());
    EXPECT_LE(all.error().line, Lines(text));
    EXPECT_TRUE(all.page().families.empty());
    return;
  }
  EXPECT_LE(all.page().SampleCount(), Lines(text));
  EXPECT_LE(some.page().SampleCount(), all.page().SampleCount());
  for (const Family& family : some.page().families) EXPECT_TRUE(keep(family.name));
}

TEST(ExpositionFuzz, MutatedRealPages) {
  const std::vector<std::string> pages = {
      Fixture("vllm-v0.5-opt125m-full.prom"), Fixture("sglang-llama31-8b-docs-full.prom"),
      Fixture("trtllm-triton-backend-readme-excerpt.prom"), Fixture("dcgm-kops-l4-full.prom")};
  const FamilyFilter keep =
      KeepFamilies({"vllm:num_requests_running", "vllm:cache_config_info", "sglang:token_usage",
                    "nv_trt_llm_request_metrics", "vllm:time_to_first_token_seconds"});
  std::mt19937_64 random(20261202);
  int parsed = 0;
  for (int i = 0; i < 4000; ++i) {
    const std::string text = Mutated(pages[static_cast<std::size_t>(i) % pages.size()], random);
    Check(text, keep);
    if (::testing::Test::HasFatalFailure()) return;
    parsed += ParseExposition(text).ok() ? 1 : 0;
  }
  // Some mutations leave a valid page (a changed digit), most do not.
  EXPECT_GT(parsed, 0);
  EXPECT_LT(parsed, 4000);
}

TEST(ExpositionFuzz, RandomBytes) {
  std::mt19937_64 random(7);
  const FamilyFilter keep = KeepFamilies({"a", "b_bucket"});
  for (int i = 0; i < 3000; ++i) {
    std::string text(random() % 512, '\0');
    // Mostly the format's own characters, so that lines get past the first byte.
    static constexpr std::string_view kAlphabet = "ab_{}=\",# \n\t1.e+-\\\"Inf";
    for (char& c : text) {
      c = random() % 4 == 0 ? static_cast<char>(random() % 256)
                            : kAlphabet[random() % kAlphabet.size()];
    }
    Check(text, keep);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(ExpositionFuzz, HugeHostilePagesStayBounded) {
  // A line of 1,000 labels, a label value of 1 MB, 100,000 families: each stops at its limit.
  std::string labels = "a{";
  for (int i = 0; i < 1000; ++i) labels += "l" + std::to_string(i) + "=\"v\",";
  labels += "} 1\n";
  ParseResult result = ParseExposition(labels);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("max_labels_per_sample"), std::string::npos);

  result = ParseExposition("a{x=\"" + std::string(1 << 20, 'v') + "\"} 1\n");
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("max_line_bytes"), std::string::npos);

  std::string families;
  for (int i = 0; i < 100001; ++i) families += "f" + std::to_string(i) + " 1\n";
  result = ParseExposition(families, {.keep = KeepFamilies({})});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("max_families"), std::string::npos);

  result = ParseExposition(std::string((16U << 20U) + 1, '\n'));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("max_bytes"), std::string::npos);
}

}  // namespace
}  // namespace eoc::signals
