#include "sim/trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/mix64.h"
#include "shared_files.h"

namespace eoc::sim {
namespace {

using ::testing::AllOf;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr std::uint64_t kBasis = 0x9E3779B97F4A7C15ULL;  // h_0 of the header's chain

// The file `name` of shared/traces, or "".
std::string SharedTrace(const std::string& name) { return testing::SharedFile("traces/" + name); }

// Options without the synthetic models, so that a test sees only what the trace says.
TraceOptions Plain() {
  TraceOptions options;
  options.sessions.share = 0;
  options.prefixes.shared_share = 0;
  return options;
}

Trace Read(const std::string& text, const TraceOptions& options) {
  std::istringstream in(text);
  return ReadTrace(in, "t", options);
}

// The TraceError's message for `text`, or "" when it reads.
std::string ErrorOf(const std::string& text, const TraceOptions& options = Plain()) {
  try {
    Read(text, options);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

const std::string kHeader = "TIMESTAMP,ContextTokens,GeneratedTokens\n";

// An Azure trace of `n` rows one second apart from 2023-11-16 18:00:00, row i with i + 1000
// prompt tokens (so that a request names its row) and 5 output tokens.
std::string AzureRows(int n) {
  std::string text = kHeader;
  for (int i = 0; i < n; ++i) {
    const int minute = i / 60;
    const int second = i % 60;
    std::string row = "2023-11-16 18:";
    row += (minute < 10 ? "0" : "") + std::to_string(minute) + ":";
    row += (second < 10 ? "0" : "") + std::to_string(second) + ".0000000,";
    text += row + std::to_string(i + 1000) + ",5\n";
  }
  return text;
}

std::vector<double> Arrivals(const Trace& trace) {
  std::vector<double> arrivals;
  arrivals.reserve(trace.requests.size());
  for (const TraceRequest& r : trace.requests) arrivals.push_back(r.arrival_seconds);
  return arrivals;
}

// How many leading blocks `a` and `b` share.
std::size_t CommonPrefix(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

TEST(ReadTrace, AzureRowsExactly) {
  // A BOM, CRLF line ends, a blank line and nine fractional digits are all accepted.
  const Trace trace = Read(
      "\xEF\xBB\xBFTIMESTAMP,ContextTokens,GeneratedTokens\r\n"
      "2023-11-16 18:17:03.9799600,4808,10\r\n"
      "2023-11-16 18:17:04.0319600,3180,8\r\n"
      "\r\n"
      "2023-11-16 18:17:05.479960001,15,0\r\n",
      Plain());
  EXPECT_EQ(trace.format, TraceFormat::kAzureCsv);
  EXPECT_EQ(trace.block_size_tokens, 16);
  ASSERT_EQ(trace.requests.size(), 3U);
  EXPECT_THAT(Arrivals(trace),
              ElementsAre(0.0, DoubleNear(0.052, 1e-9), DoubleNear(1.500000001, 1e-9)));
  EXPECT_EQ(trace.requests[0].prompt_tokens, 4808);
  EXPECT_EQ(trace.requests[0].output_tokens, 10);
  EXPECT_EQ(trace.requests[1].prompt_tokens, 3180);
  EXPECT_EQ(trace.requests[2].output_tokens, 0);
  // floor(prompt / 16) full blocks; with both models off, none is shared.
  EXPECT_EQ(trace.requests[0].prefix_blocks.size(), 300U);
  EXPECT_EQ(trace.requests[1].prefix_blocks.size(), 198U);
  EXPECT_EQ(trace.requests[2].prefix_blocks.size(), 0U);
  EXPECT_NE(trace.requests[0].prefix_blocks[0], trace.requests[1].prefix_blocks[0]);
  for (const TraceRequest& r : trace.requests) EXPECT_EQ(r.session, 0U);

  TraceOptions big_blocks = Plain();
  big_blocks.block_size_tokens = 1000;
  const Trace coarse = Read(AzureRows(2), big_blocks);
  EXPECT_EQ(coarse.block_size_tokens, 1000);
  EXPECT_EQ(coarse.requests[0].prefix_blocks.size(), 1U);
}

TEST(ReadTrace, MooncakeRowsAndChainedHashes) {
  const Trace trace = Read(
      R"({"timestamp": 0, "input_length": 1500, "output_length": 6, "hash_ids": [1, 2, 3]})"
      "\n"
      R"({"timestamp": 40, "input_length": 1400, "output_length": 7, "hash_ids": [1, 2, 4]})"
      "\n"
      R"({"timestamp": 40, "input_length": 1300, "output_length": 8, "hash_ids": [5, 2, 3]})"
      "\n"
      R"({"timestamp": 1500.0, "input_length": 1800, "output_length": 9, "hash_ids": [1, 2, 3, 7],)"
      R"( "extra": "ignored"})"
      "\n",
      Plain());
  EXPECT_EQ(trace.format, TraceFormat::kMooncakeJsonl);
  EXPECT_EQ(trace.block_size_tokens, 512);
  ASSERT_EQ(trace.requests.size(), 4U);
  EXPECT_THAT(Arrivals(trace), ElementsAre(0.0, 0.04, 0.04, 1.5));
  EXPECT_EQ(trace.requests[1].prompt_tokens, 1400);
  EXPECT_EQ(trace.requests[1].output_tokens, 7);
  EXPECT_EQ(trace.requests[3].prompt_tokens, 1800);

  // The documented chain: h_i = Mix64(h_{i-1} ^ Mix64(id_i)) from h_0 = kBasis.
  const std::uint64_t h1 = Mix64(kBasis ^ Mix64(1));
  const std::uint64_t h2 = Mix64(h1 ^ Mix64(2));
  const std::uint64_t h3 = Mix64(h2 ^ Mix64(3));
  const std::vector<std::uint64_t>& a = trace.requests[0].prefix_blocks;
  EXPECT_THAT(a, ElementsAre(h1, h2, h3));
  // Equal ids give equal hashes while the prefixes agree, and differ from the divergence on.
  const std::vector<std::uint64_t>& b = trace.requests[1].prefix_blocks;
  EXPECT_EQ(CommonPrefix(a, b), 2U);
  EXPECT_NE(a[2], b[2]);
  // The same ids after a different first block name different content.
  const std::vector<std::uint64_t>& c = trace.requests[2].prefix_blocks;
  EXPECT_EQ(CommonPrefix(a, c), 0U);
  EXPECT_NE(a[1], c[1]);
  EXPECT_NE(a[2], c[2]);
  const std::vector<std::uint64_t>& d = trace.requests[3].prefix_blocks;
  EXPECT_EQ(CommonPrefix(a, d), 3U);
  EXPECT_EQ(d.size(), 4U);
}

TEST(ReadTrace, MooncakeIdsPastThePromptAreDropped) {
  // 600 tokens: one full block and a partial one, so at most 2 ids name anything.
  const Trace trace =
      Read(R"({"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2, 3, 4]})"
           "\n"
           R"({"timestamp": 1, "input_length": 600, "output_length": 1, "hash_ids": [9]})",
           Plain());
  EXPECT_EQ(trace.requests[0].prefix_blocks.size(), 2U);
  EXPECT_EQ(trace.requests[1].prefix_blocks.size(), 1U);
}

struct BadInput {
  std::string text;
  std::string where;  // the start of the message: the name and the line
  std::string what;
};

TEST(ReadTrace, ErrorsNameTheLineAndTheProblem) {
  const std::string row = "2023-11-16 18:17:03.9799600,4808,10\n";
  const std::string json0 = R"({"timestamp": 0, "input_length": 10, "output_length": 1, )"
                            R"("hash_ids": [1]})"
                            "\n";
  const std::vector<BadInput> bad = {
      {"", "t: ", "empty"},
      {"\n\n", "t: ", "empty"},
      {kHeader, "t: ", "no requests"},
      {"TIMESTAMP,ContextTokens\n" + row, "t:1: ", "neither the Azure header"},
      {kHeader + row + "2023-11-16 18:17:04.0,12\n", "t:3: ", "expected 3 fields"},
      {kHeader + row + "2023-11-16 18:17:04.0,12,1,4\n", "t:3: ", "expected 3 fields"},
      {kHeader + "2023-11-31 18:17:04.0,12,1\n", "t:2: ", "TIMESTAMP \"2023-11-31 18:17:04.0\""},
      {kHeader + "2023-11-16T18:17:04.0,12,1\n", "t:2: ", "is not a UTC time"},
      {kHeader + "1023-11-16 18:17:04.0,12,1\n", "t:2: ", "not between 1970 and 2199"},
      {kHeader + row + "2023-11-16 18:17:04.0,12x,1\n",
       "t:3: ", "ContextTokens \"12x\" is not a whole number"},
      {kHeader + row + "2023-11-16 18:17:04.0,,1\n", "t:3: ", "is not a whole number"},
      {kHeader + row + "2023-11-16 18:17:04.0,12,-1\n",
       "t:3: ", "GeneratedTokens \"-1\" is negative"},
      {kHeader + row + "2023-11-16 18:17:04.0,10000001,1\n", "t:3: ", "over 10,000,000 tokens"},
      {kHeader + row + "2023-11-16 18:17:04.0,99999999999999999999,1\n", "t:3: ", "absurdly large"},
      {kHeader + row + "2023-11-16 18:17:02.0,12,1\n", "t:3: ", "must be in time order"},
      {json0 + "{\"timestamp\": 1, \"input_length\": \n", "t:2: ", "not valid JSON"},
      {json0 + "[1, 2]\n", "t:2: ", "not a JSON object"},
      {json0 + R"({"timestamp": 1, "input_length": 10, "output_length": 1})",
       "t:2: ", "no \"hash_ids\" member"},
      {json0 + R"({"timestamp": 1, "input_length": 10, "output_length": 1, "hash_ids": 3})",
       "t:2: ", "\"hash_ids\" is not an array"},
      {json0 + R"({"timestamp": 1, "input_length": 600, "output_length": 1, "hash_ids": [1, "x"]})",
       "t:2: ", "hash_ids[1] is \"x\", not an integer"},
      {json0 + R"({"timestamp": "1", "input_length": 10, "output_length": 1, "hash_ids": []})",
       "t:2: ", R"("timestamp" is "1", not a number)"},
      // 400,000 levels in 800 KB: writing it into the message recursed once per level and crashed.
      {json0 + R"({"timestamp": )" + std::string(400'000, '[') + std::string(400'000, ']') +
           R"(, "input_length": 10, "output_length": 1, "hash_ids": []})",
       "t:2: ", "nested deeper than 16 levels"},
      {json0 + R"({"timestamp": [[1]], "input_length": 10, "output_length": 1, "hash_ids": []})",
       "t:2: ", R"("timestamp" is an array, not a number)"},
      {json0 + R"({"timestamp": 1, "input_length": 10.5, "output_length": 1, "hash_ids": []})",
       "t:2: ", "\"input_length\" 10.5 is not a whole number"},
      {json0 + R"({"timestamp": 1, "input_length": 10, "output_length": -2, "hash_ids": []})",
       "t:2: ", "\"output_length\" -2 is negative"},
      {json0 + R"({"timestamp": 1, "input_length": 2e7, "output_length": 1, "hash_ids": []})",
       "t:2: ", "absurdly large"},
      {R"({"timestamp": 500, "input_length": 10, "output_length": 1, "hash_ids": []})"
       "\n"
       R"({"timestamp": 400, "input_length": 10, "output_length": 1, "hash_ids": []})",
       "t:2: ", "0.1 s earlier than the one before it"},
      {kHeader + row + std::string(std::size_t{1} << 21U, 'x') + "\n",
       "t:3: ", "longer than 1 MiB"},
  };
  for (const BadInput& b : bad) {
    const std::string message = ErrorOf(b.text);
    EXPECT_THAT(message, StartsWith(b.where)) << b.text.substr(0, 200);
    EXPECT_THAT(message, HasSubstr(b.what)) << b.text.substr(0, 200);
  }

  // More hash ids on a line than 65,536.
  std::string ids = "0";
  for (int i = 1; i <= 65536; ++i) ids += "," + std::to_string(i);
  EXPECT_THAT(ErrorOf(json0 +
                      R"({"timestamp": 1, "input_length": 9000000, "output_length": 1, )"
                      R"("hash_ids": [)" +
                      ids + "]}\n"),
              AllOf(StartsWith("t:2: "), HasSubstr("more than 65,536")));
}

TEST(ReadTrace, BadOptionsAndBoundsAreRefused) {
  const std::string trace = AzureRows(5);
  const auto error_with = [&](auto change) {
    TraceOptions options = Plain();
    change(options);
    return ErrorOf(trace, options);
  };
  EXPECT_THAT(error_with([](TraceOptions& o) { o.time_scale = -1; }),
              AllOf(StartsWith("t: "), HasSubstr("time_scale is -1")));
  EXPECT_THAT(error_with([](TraceOptions& o) { o.time_scale = 0; }), HasSubstr("time_scale"));
  EXPECT_THAT(error_with([](TraceOptions& o) { o.rate_scale = std::nan(""); }),
              HasSubstr("rate_scale is nan"));
  EXPECT_THAT(error_with([](TraceOptions& o) { o.rate_scale = HUGE_VAL; }),
              HasSubstr("rate_scale is inf"));
  EXPECT_THAT(error_with([](TraceOptions& o) { o.start_seconds = -1; }),
              HasSubstr("start_seconds"));
  EXPECT_THAT(error_with([](TraceOptions& o) { o.duration_seconds = 0; }),
              HasSubstr("duration_seconds"));
  EXPECT_THAT(error_with([](TraceOptions& o) { o.block_size_tokens = 0; }),
              HasSubstr("block_size_tokens"));
  EXPECT_THAT(error_with([](TraceOptions& o) { o.sessions.mean_turns = 1; }),
              HasSubstr("sessions.mean_turns"));
  EXPECT_THAT(error_with([](TraceOptions& o) { o.prefixes.min_tokens = 2000; }),
              HasSubstr("min_tokens"));
  // An empty cut says so, and where the trace ends.
  EXPECT_THAT(error_with([](TraceOptions& o) { o.start_seconds = 100; }),
              HasSubstr("the cut (from 100 s) keeps no requests; the last request read is at 4 s"));
  EXPECT_THAT(error_with([](TraceOptions& o) { o.max_requests = 0; }),
              HasSubstr("keeps no requests"));
  // Thinning to nothing says so.
  EXPECT_THAT(error_with([](TraceOptions& o) { o.rate_scale = 0; }),
              HasSubstr("rate_scale 0 left none of the 5 requests"));
  // Prefix blocks past the bound, while reading (1,004 / 16 = 62 blocks a row) and after copies.
  EXPECT_THAT(error_with([](TraceOptions& o) { o.max_total_blocks = 200; }),
              AllOf(StartsWith("t:5: "), HasSubstr("more than 200 prefix blocks")));
  EXPECT_THAT(error_with([](TraceOptions& o) {
                o.max_total_blocks = 400;
                o.rate_scale = 2;
              }),
              HasSubstr("rate_scale 2 makes more than 400 prefix blocks"));
  EXPECT_THAT(error_with([](TraceOptions& o) { o.rate_scale = 3e6; }),
              HasSubstr("more than 10,000,000 requests"));

  EXPECT_THAT([] { ReadTraceFile("/nonexistent/trace.csv", Plain()); },
              ::testing::ThrowsMessage<TraceError>(
                  HasSubstr("/nonexistent/trace.csv: cannot open the file")));
}

TEST(ReadTrace, CutsRebasesAndScalesTime) {
  const std::string trace = AzureRows(10);  // rows at 0, 1, ..., 9 s
  TraceOptions options = Plain();
  options.start_seconds = 2.5;
  options.duration_seconds = 4;
  Trace cut = Read(trace, options);
  EXPECT_THAT(Arrivals(cut), ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(cut.requests.front().prompt_tokens, 1003);
  EXPECT_EQ(cut.requests.back().prompt_tokens, 1006);

  options.max_requests = 2;
  cut = Read(trace, options);
  EXPECT_THAT(Arrivals(cut), ElementsAre(0, 1));

  options.max_requests.reset();
  options.time_scale = 0.5;
  cut = Read(trace, options);
  EXPECT_THAT(Arrivals(cut), ElementsAre(0, 0.5, 1, 1.5));

  // The cut is on the original timeline, before the time scale.
  options = Plain();
  options.time_scale = 10;
  options.duration_seconds = 3;
  cut = Read(trace, options);
  EXPECT_THAT(Arrivals(cut), ElementsAre(0, 10, 20));
}

TEST(ReadTrace, WholeRateScaleCopiesLandBeforeTheNextRequest) {
  const std::string trace = AzureRows(10);
  TraceOptions options = Plain();
  options.rate_scale = 3;
  const Trace tripled = Read(trace, options);
  ASSERT_EQ(tripled.requests.size(), 30U);
  EXPECT_TRUE(std::is_sorted(tripled.requests.begin(), tripled.requests.end(),
                             [](const TraceRequest& a, const TraceRequest& b) {
                               return a.arrival_seconds < b.arrival_seconds;
                             }));
  std::map<std::int32_t, std::vector<double>> by_row;  // prompt tokens name the row
  for (const TraceRequest& r : tripled.requests)
    by_row[r.prompt_tokens].push_back(r.arrival_seconds);
  ASSERT_EQ(by_row.size(), 10U);
  std::set<double> distinct;
  for (const auto& [tokens, arrivals] : by_row) {
    const double original = tokens - 1000;
    ASSERT_EQ(arrivals.size(), 3U);
    // One keeps the original arrival; the copies are within [it, the next row's) (the last row's:
    // the mean gap, 1 s).
    EXPECT_EQ(arrivals[0], original);
    for (const double a : arrivals) {
      EXPECT_GE(a, original);
      EXPECT_LT(a, original + 1);
      distinct.insert(a);
    }
  }
  EXPECT_EQ(distinct.size(), 30U);  // the copies do not share an instant

  // A duration cut bounds the copies of its last request at the cut's end.
  options.duration_seconds = 4.25;
  options.rate_scale = 20;
  const Trace cut = Read(trace, options);
  ASSERT_EQ(cut.requests.size(), 100U);
  EXPECT_LT(cut.requests.back().arrival_seconds, 4.25);
  EXPECT_GT(cut.requests.back().arrival_seconds, 4);
}

TEST(ReadTrace, FractionalRateScaleCountsAreBinomial) {
  const std::string trace = AzureRows(1000);
  TraceOptions options = Plain();
  options.rate_scale = 2.5;
  // 2,000 + Binomial(1000, 0.5): mean 2,500, standard deviation 15.8; five of them either side.
  const std::size_t more = Read(trace, options).requests.size();
  EXPECT_GE(more, 2421U);
  EXPECT_LE(more, 2579U);

  options.rate_scale = 0.3;  // Binomial(1000, 0.3): mean 300, standard deviation 14.5
  const Trace thinned = Read(trace, options);
  EXPECT_GE(thinned.requests.size(), 228U);
  EXPECT_LE(thinned.requests.size(), 372U);
  // A thinned trace keeps its requests' arrivals (from the cut's first request) and order.
  for (const TraceRequest& r : thinned.requests) {
    EXPECT_EQ(r.arrival_seconds, r.prompt_tokens - 1000);
  }
}

TEST(ReadTrace, SameSeedSameTraceOtherSeedOther) {
  const std::string trace = AzureRows(300);
  TraceOptions options;  // both synthetic models on
  options.rate_scale = 1.7;
  const Trace a = Read(trace, options);
  const Trace b = Read(trace, options);
  ASSERT_EQ(a.requests.size(), b.requests.size());
  for (std::size_t i = 0; i < a.requests.size(); ++i) {
    EXPECT_EQ(a.requests[i].arrival_seconds, b.requests[i].arrival_seconds);
    EXPECT_EQ(a.requests[i].prompt_tokens, b.requests[i].prompt_tokens);
    EXPECT_EQ(a.requests[i].prefix_blocks, b.requests[i].prefix_blocks);
    EXPECT_EQ(a.requests[i].session, b.requests[i].session);
  }
  options.seed = 2;
  const Trace c = Read(trace, options);
  const bool same_arrivals = Arrivals(a) == Arrivals(c);
  bool same_blocks = a.requests.size() == c.requests.size();
  for (std::size_t i = 0; same_blocks && i < a.requests.size(); ++i) {
    same_blocks = a.requests[i].prefix_blocks == c.requests[i].prefix_blocks;
  }
  EXPECT_FALSE(same_arrivals);
  EXPECT_FALSE(same_blocks);
}

TEST(ReadTrace, SharedPrefixesRecurWithZipfSkew) {
  TraceOptions options = Plain();
  options.prefixes.shared_share = 1;
  options.prefixes.shared_prefixes = 4;
  const Trace trace = Read(AzureRows(400), options);  // 1,000+ tokens: 62 to 87 blocks
  std::map<std::uint64_t, std::vector<std::size_t>> by_first_block;
  for (std::size_t i = 0; i < trace.requests.size(); ++i) {
    by_first_block[trace.requests[i].prefix_blocks.front()].push_back(i);
  }
  // Every request starts with one of the 4 prefixes; with weights 1, 1/2, 1/3, 1/4 the most
  // common carries about 48% of them, the least about 12%.
  ASSERT_EQ(by_first_block.size(), 4U);
  std::vector<std::size_t> counts;
  for (const auto& [block, requests] : by_first_block) {
    counts.push_back(requests.size());
    // Requests of one prefix share it (4 to 64 blocks: 64 to 1,024 tokens of 16), then differ.
    const TraceRequest& first = trace.requests[requests[0]];
    const TraceRequest& second = trace.requests[requests[1]];
    const std::size_t shared = CommonPrefix(first.prefix_blocks, second.prefix_blocks);
    EXPECT_GE(shared, 4U);
    EXPECT_LE(shared, 64U);
    for (const std::size_t i : requests) {
      EXPECT_EQ(CommonPrefix(first.prefix_blocks, trace.requests[i].prefix_blocks),
                i == requests[0] ? first.prefix_blocks.size() : shared);
    }
  }
  std::sort(counts.begin(), counts.end());
  EXPECT_GT(counts.back(), 150U);
  EXPECT_LT(counts.front(), 80U);

  // Off, no two requests share a block.
  options.prefixes.shared_share = 0;
  std::set<std::uint64_t> firsts;
  for (const TraceRequest& r : Read(AzureRows(400), options).requests) {
    firsts.insert(r.prefix_blocks.front());
  }
  EXPECT_EQ(firsts.size(), 400U);
}

TEST(ReadTrace, SessionTurnsCarryThePreviousTurnsBlocks) {
  TraceOptions options = Plain();
  options.sessions.share = 0.6;
  const Trace trace = Read(AzureRows(2000), options);
  std::map<std::uint64_t, std::vector<const TraceRequest*>> turns;
  std::size_t in_sessions = 0;
  for (const TraceRequest& r : trace.requests) {
    if (r.session == 0) continue;
    ++in_sessions;
    turns[r.session].push_back(&r);
  }
  // About 60% of the requests are session turns (binomial: standard deviation 1.1%).
  EXPECT_GT(in_sessions, 1100U);
  EXPECT_LT(in_sessions, 1300U);
  std::size_t multi_turn = 0;
  for (const auto& [session, list] : turns) {
    if (list.size() > 1) ++multi_turn;
    for (std::size_t t = 1; t < list.size(); ++t) {
      const std::vector<std::uint64_t>& before = list[t - 1]->prefix_blocks;
      const std::vector<std::uint64_t>& now = list[t]->prefix_blocks;
      // The whole history that fits, then blocks of its own.
      const std::size_t history = std::min(before.size(), now.size());
      EXPECT_EQ(CommonPrefix(before, now), history);
    }
  }
  EXPECT_GT(multi_turn, 200U);  // about 1,200 turns / 4 turns a session

  // One open session at most: a session never resumes once a later one has started.
  options.sessions.share = 1;
  options.sessions.max_open = 1;
  options.sessions.mean_turns = 50;
  std::uint64_t newest = 0;
  for (const TraceRequest& r : Read(AzureRows(500), options).requests) {
    EXPECT_GE(r.session, newest);
    newest = std::max(newest, r.session);
  }
  EXPECT_GT(newest, 1U);
}

TEST(ReadTrace, SessionsOffGiveSessionZeroAndLeaveMooncakeHashes) {
  const std::string text =
      R"({"timestamp": 0, "input_length": 1500, "output_length": 6, "hash_ids": [1, 2, 3]})"
      "\n"
      R"({"timestamp": 10, "input_length": 1400, "output_length": 7, "hash_ids": [1, 2, 4]})"
      "\n"
      R"({"timestamp": 20, "input_length": 100, "output_length": 7, "hash_ids": [8]})"
      "\n";
  TraceOptions on;
  on.sessions.share = 1;
  const Trace with = Read(text, on);
  const Trace without = Read(text, Plain());
  ASSERT_EQ(with.requests.size(), 3U);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NE(with.requests[i].session, 0U);
    EXPECT_EQ(without.requests[i].session, 0U);
    EXPECT_EQ(with.requests[i].prefix_blocks, without.requests[i].prefix_blocks);
  }
  TraceOptions off;
  off.sessions.share = 0;
  for (const TraceRequest& r : Read(AzureRows(200), off).requests) EXPECT_EQ(r.session, 0U);
}

TEST(ReadTrace, MooncakeCopiesAreOtherConversations) {
  const std::string text =
      R"({"timestamp": 0, "input_length": 1500, "output_length": 6, "hash_ids": [1, 2, 3]})"
      "\n"
      R"({"timestamp": 1000, "input_length": 1500, "output_length": 7, "hash_ids": [1, 2, 4]})"
      "\n";
  TraceOptions options = Plain();
  options.rate_scale = 2;
  const Trace trace = Read(text, options);
  ASSERT_EQ(trace.requests.size(), 4U);
  // Sorted: original 0 at 0 s, its copy in [0, 1), original 1 at 1 s, its copy in [1, 2).
  const TraceRequest& original0 = trace.requests[0];
  const TraceRequest& copy0 = trace.requests[1];
  const TraceRequest& original1 = trace.requests[2];
  const TraceRequest& copy1 = trace.requests[3];
  EXPECT_EQ(original0.output_tokens, 6);
  EXPECT_EQ(copy0.output_tokens, 6);
  EXPECT_EQ(original1.arrival_seconds, 1);
  EXPECT_EQ(CommonPrefix(original0.prefix_blocks, original1.prefix_blocks), 2U);
  EXPECT_EQ(CommonPrefix(copy0.prefix_blocks, copy1.prefix_blocks), 2U);
  EXPECT_EQ(CommonPrefix(original0.prefix_blocks, copy0.prefix_blocks), 0U);
  EXPECT_EQ(CommonPrefix(original1.prefix_blocks, copy0.prefix_blocks), 0U);
}

TEST(ReadTraceFile, AzureCodeTrace) {
  const std::string path = SharedTrace("azure-llm-2023-code.csv");
  if (path.empty()) GTEST_SKIP() << testing::NoSharedFile("traces/azure-llm-2023-code.csv");
  const Trace trace = ReadTraceFile(path, TraceOptions());
  EXPECT_EQ(trace.format, TraceFormat::kAzureCsv);
  ASSERT_EQ(trace.requests.size(), 8819U);
  EXPECT_EQ(trace.requests.front().arrival_seconds, 0);
  EXPECT_NEAR(trace.requests.back().arrival_seconds, 3436, 1);
  EXPECT_EQ(trace.requests.front().prompt_tokens, 4808);
  std::vector<std::int32_t> prompts;
  prompts.reserve(trace.requests.size());
  for (const TraceRequest& r : trace.requests) prompts.push_back(r.prompt_tokens);
  std::nth_element(prompts.begin(), prompts.begin() + 4409, prompts.end());
  EXPECT_EQ(prompts[4409], 1469);  // the README's median context
}

TEST(ReadTraceFile, MooncakeSyntheticTrace) {
  const std::string path = SharedTrace("mooncake-synthetic.jsonl");
  if (path.empty()) GTEST_SKIP() << testing::NoSharedFile("traces/mooncake-synthetic.jsonl");
  const Trace trace = ReadTraceFile(path, TraceOptions());
  EXPECT_EQ(trace.format, TraceFormat::kMooncakeJsonl);
  EXPECT_EQ(trace.block_size_tokens, 512);
  ASSERT_EQ(trace.requests.size(), 3993U);
  double input = 0;
  std::set<std::uint64_t> blocks;
  std::size_t total_blocks = 0;
  for (const TraceRequest& r : trace.requests) {
    input += r.prompt_tokens;
    // One id per started block of 512.
    EXPECT_EQ(r.prefix_blocks.size(), static_cast<std::size_t>((r.prompt_tokens + 511) / 512));
    blocks.insert(r.prefix_blocks.begin(), r.prefix_blocks.end());
    total_blocks += r.prefix_blocks.size();
  }
  EXPECT_NEAR(input / 3993, 15325, 1);
  // Multi-turn conversations reuse blocks: far fewer distinct hashes than blocks.
  EXPECT_LT(blocks.size(), total_blocks / 2);
  EXPECT_NEAR(trace.requests.back().arrival_seconds, 1022.025, 1e-9);
}

}  // namespace
}  // namespace eoc::sim
