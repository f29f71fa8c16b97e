// bench_routing: what one pick of the routing engine costs, and what its tables hold per entry.
// Google Benchmark; needs no cluster.
//   bench_routing [--benchmark_filter=REGEX] [other --benchmark_* flags]
//   bench/run routing     # every benchmark, figures appended to bench/results/routing.md
// A pick is PoolState::TryPick on the calling thread, among 10, 100 and 1,000 workers that serve
// the request's model and report a load whose KV budget is checked on every pick but never runs
// out. The time is fixed (nothing expires) and the randomness a fixed-seed std::mt19937_64.
//   BM_SessionHit          a session already bound: 100,000 are bound in setup, the picks cycle
//                          through them (the table's size is checked afterwards: no pick bound).
//   BM_NewSession          a fresh session each pick, placed by the consistent hash and bound. The
//                          table is full (1,000,000 sessions, its default bound) as in a steady
//                          state, so each pick's bind also evicts the least recently used session.
//   BM_StrategyPick/NAME   no session, no prefix: the strategy alone (JouleWeighted over the
//                          weights 1-1000, RoundRobin, LeastBusy).
//   BM_PrefixPick          no session; the prompt's 64 block hashes match 64 blocks recorded in
//                          setup (1,000 prompts, in groups of 10 that share their first 32 blocks),
//                          and the pick records the 64 blocks again, as every pick with a prefix
//                          does. The workers picked are scraped every 32 picks, untimed (the
//                          timer's pause and resume still add about 0.5 us per scrape: ~1%).
// BM_PrefixIndexMiss      PrefixIndex::LongestMatch alone for a prompt of 64 or 256 blocks none of
//                          which the index (1,000,000 blocks) holds: a new conversation's cost,
//                          one lookup per block, since a deeper block may be held when a shallower
//                          one was evicted.
// BM_SessionHit and BM_StrategyPick/JouleWeighted also run at 1,000 workers on 1 and 2 threads
// that share the pool: wall time per pick over all threads, which halves on 2 cores when nothing
// pool-wide serialises the picks.
// BM_PoolDirectoryFind     PoolDirectory::Find of a pool by its key ("namespace/name") among 1, 100
//                          and 1,000 pools, the keys cycled through (each lookup checked), as
//                          every pick will do before PoolState::Pick; also at 1,000 pools on 1
//                          and 2 threads: the lookup takes no lock, so 2 threads halve it.
// BM_SessionTableMemory and BM_PrefixIndexMemory fill a session table and a prefix index of
// 1,000,000 entries (time: the whole fill) and report MemoryBytes() per entry (bytes_per_session,
// bytes_per_block) and, as a cross-check, the growth of the process's resident set per entry
// (rss_bytes_per_session, rss_bytes_per_block). They run first, once, on a young heap.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "routing/ids.h"
#include "routing/pool_directory.h"
#include "routing/pool_snapshot.h"
#include "routing/pool_state.h"
#include "routing/prefix_hash.h"
#include "routing/prefix_index.h"
#include "routing/session_table.h"
#include "routing/worker.h"

namespace {

namespace routing = eoc::routing;
using routing::PickOutcome;
using routing::PickReason;
using routing::Strategy;
using TimePoint = std::chrono::steady_clock::time_point;

constexpr std::string_view kModel = "llama-3-8b";
constexpr std::int32_t kBlockSize = 16;  // tokens per KV block
// Each worker's KV blocks, all free: a pick reserves 48 to 80 of them, and a run makes far fewer
// than 10^10 picks, so the budget is checked on every pick and never runs out.
constexpr std::int64_t kKvBlocks = 1'000'000'000'000;
constexpr std::uint64_t kSeed = 20261130;

constexpr std::size_t kBoundSessions = 100'000;
// The prefix indexes' budget, as the controller's --max-prefix-blocks-total gives by default.
constexpr std::size_t kPrefixBlocksTotal = 4'000'000;
constexpr std::size_t kPromptBlocks = 64;
constexpr std::size_t kSharedBlocks = 32;  // the blocks the prompts of a group share
constexpr std::size_t kPromptGroups = 100;
constexpr std::size_t kPromptsPerGroup = 10;
constexpr std::size_t kBlockBytes = kBlockSize * routing::kPrefixBytesPerToken;
constexpr std::int64_t kPromptTokens = kPromptBlocks * kBlockSize;
// Prefix picks between two scrapes of the workers they went to. Until its next scrape each pick
// adds 1/256 to its worker's busyness, and a prefix match wins only within 0.25 of the
// strategy's choice: 32 picks (0.125, plus at most 0.035 between scraped loads) keep every pick a
// 64-block match.
constexpr std::size_t kPicksPerScrape = 32;

// The i-th of distinct non-zero hashes (Mix64 is a bijection that maps only 0 to 0).
std::uint64_t Distinct(std::uint64_t i) { return routing::Mix64(i + 1); }

std::vector<routing::Worker> MakeWorkers(std::size_t count) {
  std::vector<routing::Worker> workers(count);
  for (std::size_t i = 0; i < count; ++i) {
    routing::Worker& worker = workers[i];
    worker.pod = "bench/w-" + std::to_string(i);
    worker.key = routing::WorkerKeyOf(worker.pod);
    worker.address = "10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250) + ":8000";
    worker.capability.models = {std::string(kModel)};
    worker.capability.max_concurrency = 256;
    // Varied: among 1,000 workers, each of the weights 1-1000 once.
    worker.weight = static_cast<std::int32_t>(1 + i * 379 % 1000);
  }
  return workers;
}

// Worker `index`'s scraped load: a few sequences (busyness 0.016 to 0.051), every KV block free.
routing::Load LoadOf(std::size_t index) {
  return {.running = static_cast<double>(4 + index % 8),
          .waiting = static_cast<double>(index % 3),
          .kv_blocks_total = kKvBlocks,
          .kv_blocks_free = kKvBlocks,
          .block_size = kBlockSize,
          .available = true};
}

// The pool of one run of a pick benchmark: made by the benchmark's Setup function before its
// threads start and dropped by TearDown after they end, so that every thread picks from it.
struct Fixture {
  Fixture(std::size_t workers, Strategy strategy)
      : pool(routing::PoolState::Options{}, budget, prefix_budget), keys(workers) {
    auto snapshot = routing::PoolSnapshot::Build(MakeWorkers(workers), /*generation=*/1, strategy);
    for (std::size_t i = 0; i < workers; ++i) keys[i] = snapshot->worker(i).key;
    pool.SetSnapshot(std::move(snapshot), now);
    ScrapeAll();
  }

  // A scrape of worker `index`: its load again, the picks and blocks sent to it since back to 0.
  void Scrape(std::size_t index) { pool.ObserveLoad(keys[index], LoadOf(index), now); }
  void ScrapeAll() {
    for (std::size_t i = 0; i < keys.size(); ++i) Scrape(i);
  }

  const TimePoint now = std::chrono::steady_clock::now();
  routing::SessionBudget budget;
  routing::PrefixBudget prefix_budget{kPrefixBlocksTotal};
  routing::PoolState pool;
  std::vector<routing::WorkerKey> keys;                  // by worker index
  std::vector<routing::SessionHash> sessions;            // BM_SessionHit's, bound
  std::vector<std::vector<routing::BlockHash>> prompts;  // BM_PrefixPick's, recorded
  std::vector<std::size_t> prompt_workers;               // the worker holding each prompt's blocks
  std::size_t filled = 0;                                // BM_NewSession's sessions bound in setup
  std::string error;                                     // why the setup failed, if it did
};

std::unique_ptr<Fixture> fixture;

std::size_t Workers(const benchmark::State& state) {
  return static_cast<std::size_t>(state.range(0));
}

// Marks the run failed if its setup did; true then.
bool SetupFailed(benchmark::State& state) {
  if (fixture->error.empty()) return false;
  state.SkipWithError(fixture->error.c_str());
  return true;
}

// Whether `outcome` is a pick for `reason`; otherwise marks the run failed.
bool Expect(benchmark::State& state, const PickOutcome& outcome, PickReason reason) {
  if (outcome.picked() && outcome.reason == reason) return true;
  const std::string error = "pick " + std::string(routing::ToString(outcome.status)) + " (" +
                            std::string(routing::ToString(outcome.reason)) + "), expected " +
                            std::string(routing::ToString(reason));
  state.SkipWithError(error.c_str());
  return false;
}

// `unit` repeated and cut to exactly `bytes` bytes.
std::string Repeat(std::string_view unit, std::size_t bytes) {
  std::string text;
  text.reserve(bytes + unit.size());
  while (text.size() < bytes) text.append(unit);
  text.resize(bytes);
  return text;
}

// Calls add(0), add(1), ... until size() reaches `bound`; returns how many it added. A sharded
// table's bound is split over its shards and keys do not spread exactly evenly, so the fullest
// shards evict before `bound` entries are in: every shard is full only some percent later.
template <typename Add, typename Size>
std::size_t FillTo(std::size_t bound, const Add& add, const Size& size) {
  std::size_t added = 0;
  for (std::size_t chunk = bound; size() < bound; chunk = std::max<std::size_t>(bound / 100, 1)) {
    for (const std::size_t end = added + chunk; added < end; ++added) add(added);
  }
  return added;
}

// The process's resident set, in bytes.
double ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t size = 0;
  std::size_t resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

void SetUpSessionHit(const benchmark::State& state) {
  fixture = std::make_unique<Fixture>(Workers(state), Strategy::kJouleWeighted);
  std::mt19937_64 random(kSeed);
  for (std::size_t i = 0; i < kBoundSessions; ++i) {
    const routing::SessionHash session = Distinct(i);
    const PickOutcome outcome =
        fixture->pool.TryPick({.model = kModel, .session = session}, random(), fixture->now);
    if (!outcome.picked()) {
      fixture->error = "binding the sessions: " + std::string(routing::ToString(outcome.status));
      return;
    }
    fixture->sessions.push_back(session);
  }
  fixture->ScrapeAll();
}

void SetUpNewSession(const benchmark::State& state) {
  fixture = std::make_unique<Fixture>(Workers(state), Strategy::kJouleWeighted);
  // Filled directly (faster than picks): which worker a session is bound to does not matter here.
  routing::SessionTable& sessions = *fixture->pool.sessions();
  const std::vector<routing::WorkerKey>& keys = fixture->keys;
  fixture->filled = FillTo(
      sessions.options().max_sessions,
      [&](std::size_t i) { sessions.Bind(Distinct(i), keys[i % keys.size()], fixture->now); },
      [&] { return sessions.Size(); });
}

template <Strategy kStrategy>
void SetUpStrategyPick(const benchmark::State& state) {
  fixture = std::make_unique<Fixture>(Workers(state), kStrategy);
}

void SetUpPrefixPick(const benchmark::State& state) {
  fixture = std::make_unique<Fixture>(Workers(state), Strategy::kJouleWeighted);
  std::mt19937_64 random(kSeed);
  for (std::size_t group = 0; group < kPromptGroups; ++group) {
    const std::string shared =
        Repeat("group " + std::to_string(group) + ": ", kSharedBlocks * kBlockBytes);
    for (std::size_t member = 0; member < kPromptsPerGroup; ++member) {
      const std::string own = Repeat("prompt " + std::to_string(member) + ": ",
                                     (kPromptBlocks - kSharedBlocks) * kBlockBytes);
      auto blocks = routing::PrefixHashes(kModel, shared + own, kBlockSize);
      const PickOutcome outcome =
          fixture->pool.TryPick({.model = kModel, .prefix = blocks, .prompt_tokens = kPromptTokens},
                                random(), fixture->now);
      if (blocks.size() != kPromptBlocks || !outcome.picked()) {
        fixture->error = "recording the prompts: " + std::to_string(blocks.size()) + " blocks, " +
                         std::string(routing::ToString(outcome.status));
        return;
      }
      fixture->prompts.push_back(std::move(blocks));
    }
  }
  fixture->ScrapeAll();
  // Each prompt's 64 blocks are held by one worker: where its picks must go.
  const auto snapshot = fixture->pool.snapshot();
  for (const auto& blocks : fixture->prompts) {
    const auto match = fixture->pool.prefix_index()->LongestMatch(
        blocks, [](routing::WorkerKey /*worker*/) { return true; });
    if (!match || match->blocks != kPromptBlocks) {
      fixture->error = "a prompt's blocks are not all recorded";
      return;
    }
    fixture->prompt_workers.push_back(*snapshot->IndexOf(match->worker));
  }
}

void TearDown(const benchmark::State& /*state*/) { fixture.reset(); }

void BM_SessionHit(benchmark::State& state) {
  if (SetupFailed(state)) return;
  std::mt19937_64 random(kSeed + static_cast<std::uint64_t>(state.thread_index()));
  const std::vector<routing::SessionHash>& sessions = fixture->sessions;
  // Threads start at different sessions.
  std::size_t next = static_cast<std::size_t>(state.thread_index()) * sessions.size() /
                     static_cast<std::size_t>(state.threads());
  for ([[maybe_unused]] auto _ : state) {
    const PickOutcome outcome =
        fixture->pool.TryPick({.model = kModel, .session = sessions[next]}, random(), fixture->now);
    if (!Expect(state, outcome, PickReason::kSession)) break;
    if (++next == sessions.size()) next = 0;
  }
  if (state.thread_index() == 0 && fixture->pool.sessions()->Size() != sessions.size()) {
    state.SkipWithError("a pick bound a new session: not every pick was a hit");
  }
}

void BM_NewSession(benchmark::State& state) {
  if (SetupFailed(state)) return;
  std::mt19937_64 random(kSeed);
  std::uint64_t next = fixture->filled;  // after the sessions of the setup
  for ([[maybe_unused]] auto _ : state) {
    const PickOutcome outcome = fixture->pool.TryPick(
        {.model = kModel, .session = Distinct(next++)}, random(), fixture->now);
    if (!Expect(state, outcome, PickReason::kSession)) break;
  }
}

void BM_StrategyPick(benchmark::State& state) {
  if (SetupFailed(state)) return;
  std::mt19937_64 random(kSeed + static_cast<std::uint64_t>(state.thread_index()));
  const routing::PickRequest request{.model = kModel};
  for ([[maybe_unused]] auto _ : state) {
    const PickOutcome outcome = fixture->pool.TryPick(request, random(), fixture->now);
    if (!Expect(state, outcome, PickReason::kStrategy)) break;
  }
}

void BM_PrefixPick(benchmark::State& state) {
  if (SetupFailed(state)) return;
  std::mt19937_64 random(kSeed);
  const std::vector<std::vector<routing::BlockHash>>& prompts = fixture->prompts;
  std::size_t next = 0;
  std::array<std::size_t, kPicksPerScrape> picked{};  // the workers picked since the last scrape
  std::size_t unscraped = 0;
  for ([[maybe_unused]] auto _ : state) {
    const PickOutcome outcome = fixture->pool.TryPick(
        {.model = kModel, .prefix = prompts[next], .prompt_tokens = kPromptTokens}, random(),
        fixture->now);
    if (!Expect(state, outcome, PickReason::kPrefix)) break;
    if (outcome.index != fixture->prompt_workers[next]) {
      state.SkipWithError("a prefix pick left the worker holding the prompt's 64 blocks");
      break;
    }
    if (++next == prompts.size()) next = 0;
    picked[unscraped++] = outcome.index;
    if (unscraped == picked.size()) {
      state.PauseTiming();
      for (const std::size_t index : picked) fixture->Scrape(index);
      unscraped = 0;
      state.ResumeTiming();
    }
  }
}

void BM_PrefixIndexMiss(benchmark::State& state) {
  const auto length = static_cast<std::size_t>(state.range(0));
  routing::PrefixBudget budget(kPrefixBlocksTotal);
  routing::PrefixIndex index(routing::PrefixIndex::Options{.max_blocks = 1'000'000}, budget);
  std::vector<routing::BlockHash> blocks(kPromptBlocks);
  // 15,000 prompts of 64 distinct blocks: 960,000 blocks, within the bound.
  for (std::size_t prompt = 0; prompt < 15'000; ++prompt) {
    for (std::size_t k = 0; k < kPromptBlocks; ++k) {
      blocks[k] = Distinct(prompt * kPromptBlocks + k);
    }
    index.Record(blocks, Distinct(prompt % 1000));
  }
  std::vector<routing::BlockHash> novel(length);
  for (std::size_t k = 0; k < length; ++k) novel[k] = Distinct((std::uint64_t{1} << 40U) + k);
  for ([[maybe_unused]] auto _ : state) {
    auto match = index.LongestMatch(novel, [](routing::WorkerKey) { return true; });
    if (match) {
      state.SkipWithError("a novel prompt matched");
      break;
    }
    benchmark::DoNotOptimize(match);
  }
}

void BM_SessionTableMemory(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  const TimePoint now = std::chrono::steady_clock::now();
  routing::SessionBudget budget;
  std::optional<routing::SessionTable> table;
  const double resident_before = ResidentBytes();
  for ([[maybe_unused]] auto _ : state) {
    table.emplace(routing::SessionTable::Options{.max_sessions = count}, budget);
    FillTo(
        count, [&](std::size_t i) { table->Bind(Distinct(i), Distinct(i % 1000), now); },
        [&] { return table->Size(); });
  }
  const double resident_growth = ResidentBytes() - resident_before;
  const auto sessions = static_cast<double>(table->Size());
  state.counters["sessions"] = sessions;
  state.counters["bytes_per_session"] = static_cast<double>(table->MemoryBytes()) / sessions;
  state.counters["rss_bytes_per_session"] = resident_growth / sessions;
}

void BM_PrefixIndexMemory(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  routing::PrefixBudget budget(kPrefixBlocksTotal);
  std::optional<routing::PrefixIndex> index;
  std::vector<routing::BlockHash> blocks(kPromptBlocks);
  const double resident_before = ResidentBytes();
  for ([[maybe_unused]] auto _ : state) {
    index.emplace(routing::PrefixIndex::Options{.max_blocks = count}, budget);
    // Prompts of 64 distinct blocks, sent to 1,000 workers in turn.
    const auto record = [&](std::size_t prompt) {
      for (std::size_t k = 0; k < kPromptBlocks; ++k) {
        blocks[k] = Distinct(prompt * kPromptBlocks + k);
      }
      index->Record(blocks, Distinct(prompt % 1000));
    };
    // Counted in prompts: 15,625 prompts of 64 blocks are 1,000,000 blocks.
    FillTo(count / kPromptBlocks, record, [&] { return index->Size() / kPromptBlocks; });
  }
  const double resident_growth = ResidentBytes() - resident_before;
  const auto size = static_cast<double>(index->Size());
  state.counters["blocks"] = size;
  state.counters["bytes_per_block"] = static_cast<double>(index->MemoryBytes()) / size;
  state.counters["rss_bytes_per_block"] = resident_growth / size;
}

// A directory of state.range(0) pools, "ns-K/pool-K", shared by the threads of a run.
struct Directory {
  routing::SessionBudget budget;
  routing::PrefixBudget prefix_budget;
  routing::PoolDirectory pools{budget, prefix_budget};
  std::vector<std::string> keys;
};
std::unique_ptr<Directory> directory;

void SetUpDirectory(const benchmark::State& state) {
  directory = std::make_unique<Directory>();
  routing::PoolState::Options options;
  options.session_affinity = false;  // the lookup is measured, not the pools' tables
  options.prefix_affinity = false;
  const auto now = std::chrono::steady_clock::time_point{};
  for (std::int64_t i = 0; i < state.range(0); ++i) {
    directory->keys.push_back("ns-" + std::to_string(i) + "/pool-" + std::to_string(i));
    directory->pools.Configure(directory->keys.back(), options, now);
  }
}

void TearDownDirectory(const benchmark::State& /*state*/) { directory.reset(); }

void BM_PoolDirectoryFind(benchmark::State& state) {
  const std::vector<std::string>& keys = directory->keys;
  std::size_t k = static_cast<std::size_t>(state.thread_index()) * 7919;
  std::size_t missing = 0;
  for ([[maybe_unused]] auto _ : state) {
    const std::string& key = keys[k++ % keys.size()];
    const auto found = directory->pools.Find(key);
    missing += found == nullptr ? 1 : 0;
    benchmark::DoNotOptimize(found.get());
  }
  if (missing > 0) state.SkipWithError("a configured pool was not found");
}

// 10, 100 and 1,000 workers.
void AtPoolSizes(benchmark::internal::Benchmark* benchmark) {
  benchmark->ArgName("workers")->RangeMultiplier(10)->Range(10, 1000);
}

// 1,000 workers, picked from by 1 and then 2 threads.
void AtOneThenTwoThreads(benchmark::internal::Benchmark* benchmark) {
  benchmark->ArgName("workers")->Arg(1000)->Threads(1)->Threads(2)->UseRealTime();
}

BENCHMARK(BM_SessionTableMemory)
    ->ArgName("sessions")
    ->Arg(1'000'000)
    ->Iterations(1)
    ->Repetitions(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrefixIndexMemory)
    ->ArgName("blocks")
    ->Arg(1'000'000)
    ->Iterations(1)
    ->Repetitions(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SessionHit)->Apply(AtPoolSizes)->Setup(SetUpSessionHit)->Teardown(TearDown);
BENCHMARK(BM_SessionHit)->Apply(AtOneThenTwoThreads)->Setup(SetUpSessionHit)->Teardown(TearDown);
BENCHMARK(BM_NewSession)->Apply(AtPoolSizes)->Setup(SetUpNewSession)->Teardown(TearDown);
BENCHMARK(BM_StrategyPick)
    ->Name("BM_StrategyPick/JouleWeighted")
    ->Apply(AtPoolSizes)
    ->Setup(SetUpStrategyPick<Strategy::kJouleWeighted>)
    ->Teardown(TearDown);
BENCHMARK(BM_StrategyPick)
    ->Name("BM_StrategyPick/JouleWeighted")
    ->Apply(AtOneThenTwoThreads)
    ->Setup(SetUpStrategyPick<Strategy::kJouleWeighted>)
    ->Teardown(TearDown);
BENCHMARK(BM_StrategyPick)
    ->Name("BM_StrategyPick/RoundRobin")
    ->Apply(AtPoolSizes)
    ->Setup(SetUpStrategyPick<Strategy::kRoundRobin>)
    ->Teardown(TearDown);
BENCHMARK(BM_StrategyPick)
    ->Name("BM_StrategyPick/LeastBusy")
    ->Apply(AtPoolSizes)
    ->Setup(SetUpStrategyPick<Strategy::kLeastBusy>)
    ->Teardown(TearDown);
BENCHMARK(BM_PrefixPick)->Apply(AtPoolSizes)->Setup(SetUpPrefixPick)->Teardown(TearDown);
BENCHMARK(BM_PrefixIndexMiss)->ArgName("blocks")->Arg(64)->Arg(256);
BENCHMARK(BM_PoolDirectoryFind)
    ->ArgName("pools")
    ->Arg(1)
    ->Arg(100)
    ->Arg(1000)
    ->Setup(SetUpDirectory)
    ->Teardown(TearDownDirectory);
BENCHMARK(BM_PoolDirectoryFind)
    ->ArgName("pools")
    ->Arg(1000)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime()
    ->Setup(SetUpDirectory)
    ->Teardown(TearDownDirectory);

}  // namespace

BENCHMARK_MAIN();
