// The simulator's request traces: the Azure LLM inference trace (CSV) and Mooncake's JSONL traces
// read into one list of requests sorted by arrival, cut to a window of the original timeline,
// stretched or compressed in time, thinned or multiplied in rate, and given what neither format
// has: sessions, and (for Azure) prompt prefixes that a KV cache could reuse. Pure: everything
// random comes from `TraceOptions::seed`, so the same file and options give the same requests.
//
//   eoc::sim::TraceOptions options;
//   options.duration_seconds = 600;   // the trace's first ten minutes
//   options.rate_scale = 2;           // with twice as many requests
//   const eoc::sim::Trace trace = eoc::sim::ReadTraceFile("azure-llm-2023-code.csv", options);
//   for (const eoc::sim::TraceRequest& r : trace.requests) {
//     // at r.arrival_seconds: r.prompt_tokens, r.output_tokens, r.prefix_blocks, r.session
//   }
//
// The formats (the format is told from the first line, not from the file's name):
//  - Azure: the header `TIMESTAMP,ContextTokens,GeneratedTokens`, then rows such as
//    `2023-11-16 18:17:03.9799600,4808,10` (UTC; a year from 1970 to 2199), sorted by time. A UTF-8
//    BOM and CRLF line ends are accepted.
//  - Mooncake: one JSON object a line, `{"timestamp": <ms from the trace's start>, "input_length":
//    N, "output_length": N, "hash_ids": [ids]}`, in time order. Each id names one 512-token block
//    of the prompt (the last may be partial); equal ids are the same KV content. Ids past the
//    prompt's blocks (beyond floor(input_length / 512) + 1) are dropped; other members are
//    ignored. Timestamps and lengths may be written as whole floats (512.0).
// Blank lines are skipped. Bad input throws TraceError, whose message starts with the trace's name
// and, when a line is at fault, its number: "code.csv:17: ContextTokens "-3" is negative".
//
// Order of the steps, each documented at its option below: read and cut on the original timeline
// (`start_seconds`, `duration_seconds`, `max_requests`); re-base arrivals to the first kept
// request; multiply them by `time_scale`; copy or thin by `rate_scale`; sort by arrival (stably);
// then, in arrival order, assign sessions and (Azure) synthesize prefix blocks.
//
// Prefix blocks are chained hashes, so that one hash names the whole prompt up to the end of its
// block and two requests share a KV block exactly when they share every block before it:
//   h_0 = 0x9E3779B97F4A7C15 (for Mooncake copies, below: Mix64(h_0 + copy)),
//   h_i = Mix64(h_{i-1} ^ Mix64(id_i)),  with eoc::Mix64 (common/mix64.h),
// where id_i is the trace's i-th hash id (Mooncake) or a synthetic block id (Azure).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace eoc::sim {

struct TraceRequest {
  // Seconds from the first request of the cut trace (before thinning), after `time_scale`.
  double arrival_seconds = 0;
  std::int32_t prompt_tokens = 0;
  std::int32_t output_tokens = 0;
  // Chained hashes (above), one per block of `Trace::block_size_tokens` tokens: for Azure one per
  // full block, floor(prompt_tokens / block_size_tokens) of them; for Mooncake one per hash id the
  // trace gives (the last may name a partial block).
  std::vector<std::uint64_t> prefix_blocks;
  // 0: the request belongs to no session; else a synthetic session id (1, 2, ... in the order the
  // sessions open), the same for every turn of one session.
  std::uint64_t session = 0;
};

enum class TraceFormat : std::uint8_t { kAzureCsv, kMooncakeJsonl };

// Synthetic sessions: neither format says which requests continue a conversation, so a seeded
// model does, taking the requests in arrival order. Each request is
//  - with probability share * (mean_turns - 1) / mean_turns, the next turn of an open session
//    picked uniformly (or the first turn of a new one when none is open);
//  - else with probability share / mean_turns, the first turn of a new session, whose number of
//    turns is 2 plus a geometric count with mean mean_turns - 2 (so mean_turns on average);
//  - else a one-off request (session 0).
// So about `share` of the requests are turns of multi-turn sessions. A session closes after its
// last turn; beyond `max_open` open sessions the oldest is closed early, which bounds the model's
// memory and keeps a session's turns from being spread over the whole trace.
// For Azure a turn's prompt starts with the previous turn's blocks (as many as fit in its own),
// as a conversation resends its history; Mooncake's hash ids already say what is reused, so there
// sessions only set TraceRequest::session.
struct SessionModel {
  // 0 turns sessions off. 0.6: most traffic of a chat or coding assistant follows up on earlier
  // turns, yet one-off calls (batch jobs, single completions) remain common enough to matter.
  double share = 0.6;
  // At least 2. 4: short conversations of a few follow-ups, the common case in assistants.
  double mean_turns = 4;
  // At least 1. 10,000: far above the concurrent conversations of the sample traces' rates.
  std::size_t max_open = 10'000;
};

// Synthetic shared prefixes for Azure, whose trace gives no hashes: what a KV cache could reuse
// across users is mostly a service's system prompts and templates. A request that does not
// continue a session starts, with probability `shared_share`, with one of `shared_prefixes`
// prefixes, prefix k (0-based) chosen with weight 1 / (k + 1)^zipf_s. Prefix k is a fixed number of
// tokens drawn once, uniformly in [min_tokens, max_tokens], and covers floor(tokens /
// block_size_tokens) blocks, never more than the request's own. The rest of a request's blocks
// are unique to it (except a session's history, above).
struct PrefixModel {
  // 0 turns shared prefixes off. 0.5: services commonly wrap user text in a fixed system prompt,
  // but raw completions and client-built prompts do not; half keeps both kinds in the mix.
  double shared_share = 0.5;
  // 1 to 1 << 20. 8: a service runs a handful of prompts (per product feature or client).
  std::size_t shared_prefixes = 8;
  // >= 0; 0 is uniform. 1: a few prompts (the default client) carry most traffic.
  double zipf_s = 1;
  // 1 <= min_tokens <= max_tokens <= 1 << 20. 64 to 1,024 tokens: from a one-line instruction to a
  // page of guidelines, below the Azure code trace's median context (1,469 tokens) so most
  // requests still hold the whole prefix and some tokens of their own.
  std::int32_t min_tokens = 64;
  std::int32_t max_tokens = 1024;
};

struct TraceOptions {
  // > 0, finite: arrival times (after the cut and the re-basing) are multiplied by this; 0.5
  // replays the trace in half the time (at twice the rate).
  double time_scale = 1;
  // >= 0, finite, at most 10,000,000: the same timeline with this many times the requests. Each
  // request appears floor(R) times, plus once more with probability frac(R); the first appearance
  // keeps its arrival, every further copy arrives uniformly at random between it and the next
  // original request (the next row of the file, even one past the cut, but never past the end of
  // `duration_seconds`; after the file's last row, the mean gap of the kept requests), so copies
  // do not land on one instant. R < 1 thins the trace. For Mooncake, copy c >= 1 of each request
  // gets its hashes chained from Mix64(h_0 + c): copies are other users' conversations, which
  // share their history with each other's turns but not with the original's.
  double rate_scale = 1;
  // >= 0: the cut keeps the requests from this many seconds after the file's first request...
  double start_seconds = 0;
  // ...for this many seconds (> 0) of the original timeline, before any scaling...
  std::optional<double> duration_seconds;
  // ...and at most this many of them (before rate_scale).
  std::optional<std::size_t> max_requests;
  // Azure only, 1 to 1 << 20: prompt tokens per synthetic prefix block (a KV cache page; vLLM's
  // default is 16). Mooncake blocks are the trace's, 512 tokens.
  std::int32_t block_size_tokens = 16;
  std::uint64_t seed = 1;
  SessionModel sessions;
  PrefixModel prefixes;
  // A trace whose requests would hold more prefix blocks than this in all is refused (2^28 blocks,
  // 2 GiB of hashes): a larger block size or a shorter cut reads it.
  std::size_t max_total_blocks = std::size_t{1} << 28U;
};

struct Trace {
  TraceFormat format = TraceFormat::kAzureCsv;
  std::int32_t block_size_tokens = 0;  // 512 for Mooncake, options.block_size_tokens for Azure
  std::vector<TraceRequest> requests;  // sorted by arrival, never empty
};

// What is wrong with a trace or with the options for it; the message names the trace (and the
// line at fault, when one is).
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The trace in `in`, called `name` in error messages. Bounded: a line over 1 MiB, a token count
// over 10,000,000, more than 65,536 hash ids on a line, more than 10,000,000 requests (kept or
// after rate_scale) and more than `max_total_blocks` prefix blocks are refused. Reading stops at
// the first row past the cut, so the rest of the input is not checked. Throws TraceError.
Trace ReadTrace(std::istream& in, const std::string& name, const TraceOptions& options);

// The trace in the file at `path` (also its name in error messages). Throws TraceError.
Trace ReadTraceFile(const std::string& path, const TraceOptions& options);

}  // namespace eoc::sim
