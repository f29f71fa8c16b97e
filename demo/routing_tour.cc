// eoc-routing-tour: the routing engine (src/routing/) at work on a pool's published routing table,
// before the pick endpoint gives it an HTTP surface. It reads the table on stdin, one worker a
// line (`POD ADDRESS WEIGHT`), builds the snapshot and the pool state a picker replica would, and
// plays short scenes with synthetic scrapes and a clock of its own: the strategy's shares, a
// session, a full KV cache, a shared prefix, the wait queue, and a worker that leaves. Each pick
// prints what was asked, the worker chosen and why (the pick endpoint's `reason`), or what became
// of the pick. Pure stdout, the same for the same table and seed. With --shares, only the first
// table: how 1,000 picks at equal loads fall on the table's weights.
//
//   kubectl get inferencepool vllm-llama -o jsonpath='{range .status.routing.workers[*]}{.pod}
//     {.address} {.weight}{"\n"}{end}' | eoc-routing-tour --strategy JouleWeighted --seed 1
//
// Exits 2 on bad input (naming the line) or an unknown strategy.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "routing/ids.h"
#include "routing/pool_snapshot.h"
#include "routing/pool_state.h"
#include "routing/prefix_hash.h"
#include "routing/session_table.h"
#include "routing/wait_queue.h"
#include "routing/weights.h"
#include "routing/worker.h"
#include "routing_table_input.h"
#include "tour_format.h"

namespace {

using eoc::demo::Fixed;
using eoc::demo::InputError;
using eoc::demo::Pad;
using eoc::demo::Percent;
using eoc::demo::Quote;
using eoc::demo::Right;
using eoc::demo::Row;
using eoc::routing::BlockHash;
using eoc::routing::Load;
using eoc::routing::PickOutcome;
using eoc::routing::PickReason;
using eoc::routing::PickRequest;
using eoc::routing::PickStatus;
using eoc::routing::PoolSnapshot;
using eoc::routing::PoolState;
using eoc::routing::Strategy;
using eoc::routing::Worker;
using eoc::routing::WorkerKey;
using TimePoint = std::chrono::steady_clock::time_point;

// The demo pool's model (crds/samples/vllm-pool.yaml); it seeds the prefix hashes.
constexpr std::string_view kModel = "meta-llama/Meta-Llama-3-8B-Instruct";
// The CRD's prefixAffinity.blockSizeTokens default, and the engines' KV block size here.
constexpr std::int32_t kBlockSize = 16;
// A scrape with room: a few sequences running, three quarters of the KV cache free.
constexpr double kRunning = 8;
constexpr std::int64_t kBlocksTotal = 8192;
constexpr std::int64_t kBlocksFree = 6144;
// A full KV cache: fewer free blocks than a request of the default size needs (48).
constexpr std::int64_t kBlocksFull = 40;
// A busy worker, for the prefix scene.
constexpr double kRunningBusy = 200;
// routing.admission: maxQueue small, so that the shedding scene sheds; queueTimeoutSeconds as the
// CRD's default.
constexpr std::size_t kMaxQueue = 2;
constexpr auto kQueueTimeout = std::chrono::seconds(120);
// Scene a.
constexpr int kStrategyPicks = 1000;
// Rows of a share table before the rest are summarised.
constexpr std::size_t kMaxRows = 8;
// The A100 profile of the sample pool: (400 W - 60 W) / 2500 tokens/s.
constexpr double kA100JoulesPerToken = 0.136;
// Scene a's assumed marginal energy: the A100 figure times these, cycling over the workers.
constexpr std::array<double, 4> kJouleFactors = {1, 2, 4, 8};
// Columns of a pick line.
constexpr std::size_t kWhatWidth = 16;
constexpr std::size_t kMaxPodWidth = 48;

// A scrape: `running` sequences, `free` of kBlocksTotal KV blocks free.
Load Scrape(double running, std::int64_t free) {
  return Load{.running = running,
              .kv_cache_usage = 1 - static_cast<double>(free) / kBlocksTotal,
              .kv_blocks_total = kBlocksTotal,
              .kv_blocks_free = free,
              .block_size = kBlockSize,
              .available = true};
}

// A prompt that starts with a long shared system prompt.
std::string Prompt(std::string_view question) {
  static constexpr std::string_view kSentence =
      "You are the support assistant of an energy-aware inference platform. Answer in plain "
      "words, cite the runbook section you used, and say so when you do not know. ";
  std::string prompt;
  while (prompt.size() < 1000) prompt += kSentence;
  return prompt + "Question: " + std::string(question);
}

class Tour {
 public:
  Tour(std::vector<Worker> table, Strategy strategy, std::uint64_t seed)
      : table_(std::move(table)),
        strategy_(strategy),
        rng_(seed),
        seed_(seed),
        pool_(Options(), budget_, prefix_budget_) {
    for (const Worker& w : table_) {
      pod_width_ = std::min(kMaxPodWidth, std::max(pod_width_, w.pod.size()));
      address_width_ = std::max(address_width_, w.address.size());
      if (w.weight > 0 && !w.draining) ++takers_;
    }
  }

  // Only the strategy's shares of 1,000 picks on the table as read.
  void PickShares() {
    Publish(table_);
    ScrapeAll();
    ShareTable(table_, Shares(table_, kStrategyPicks), {});
    std::cout.flush();
  }

  void Run() {
    Intro();
    StrategyShares();
    Session();
    SessionOverflow();
    Prefix();
    WaitQueue();
    WorkerLeaves();
    std::cout.flush();
  }

 private:
  // The CRD's defaults, but for maxQueue.
  static PoolState::Options Options() {
    PoolState::Options options;
    options.max_queue = kMaxQueue;
    return options;
  }

  // The KV blocks a request of the default size needs.
  std::int64_t Blocks() const {
    const std::int64_t tokens =
        pool_.options().default_prompt_tokens + pool_.options().default_expected_tokens;
    return (tokens + kBlockSize - 1) / kBlockSize;
  }

  void Publish(std::vector<Worker> workers) {
    pool_.SetSnapshot(PoolSnapshot::Build(std::move(workers), ++generation_, strategy_), now_);
  }

  void Observe(WorkerKey worker, const Load& load) {
    now_ += std::chrono::milliseconds(10);
    pool_.ObserveLoad(worker, load, now_);
  }

  // Every worker of the current snapshot scraped with room.
  void ScrapeAll(std::int64_t free = kBlocksFree) {
    for (const Worker& w : pool_.snapshot()->workers()) Observe(w.key, Scrape(kRunning, free));
  }

  PickRequest Request() const { return PickRequest{.model = kModel}; }

  // A pick that may wait (up to the queue timeout): prints its outcome now, and a waiting pick's
  // answer when it comes.
  PickOutcome Pick(const std::string& what, const PickRequest& request) {
    now_ += std::chrono::milliseconds(50);
    PickOutcome out =
        pool_.Pick(request, rng_(), now_,
                   {.deadline = eoc::routing::WaitDeadline(now_, kQueueTimeout, std::nullopt),
                    .make_done = [this, what] {
                      return [this, what](const PickOutcome& answer) { Show(what, answer); };
                    }});
    Show(what, out);
    return out;
  }

  void Show(std::string_view what, const PickOutcome& out) const {
    std::string line = "   " + Pad(what, kWhatWidth) + " -> ";
    if (out.picked()) {
      const Worker& w = out.worker();
      line += Pad(w.pod, pod_width_) + "  " + Pad(w.address, address_width_) + "  " +
              std::string(ToString(out.reason));
    } else {
      line += Pad(ToString(out.status), 12);
      switch (out.status) {
        case PickStatus::kQueued:
          line += "waits for room (answered later)";
          break;
        case PickStatus::kQueueFull:
          line += "shed: maxQueue picks wait already (HTTP 429)";
          break;
        case PickStatus::kTimedOut:
          line += "its deadline passed (HTTP 504)";
          break;
        case PickStatus::kUnavailable:
        case PickStatus::kNotPublished:
          line += "(HTTP 503)";
          break;
        case PickStatus::kUnknownModel:
          line += "the pool does not list this model (HTTP 404)";
          break;
        case PickStatus::kTooLarge:
          line += "needs more KV blocks than its largest worker holds (HTTP 400)";
          break;
        case PickStatus::kPicked:
        case PickStatus::kNoRoom:
          break;
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << line << "\n";
  }

  static void Heading(std::string_view text) { std::cout << "\n" << text << "\n"; }
  static void Say(std::string_view text) { std::cout << "   " << text << "\n"; }

  void Intro() {
    std::cout << "eoc-routing-tour: the routing engine on a table of " << table_.size() << " worker"
              << (table_.size() == 1 ? "" : "s") << ", strategy "
              << eoc::routing::StrategyName(strategy_) << ", seed " << seed_ << "\n";
    std::cout << "every request: " << pool_.options().default_prompt_tokens << " prompt + "
              << pool_.options().default_expected_tokens << " expected tokens = " << Blocks()
              << " KV blocks of " << kBlockSize << " tokens\n"
              << "every scene starts from a scrape of each worker: " << kRunning << " running, "
              << kBlocksFree << " of " << kBlocksTotal << " KV blocks free\n";
    Publish(table_);
    ScrapeAll();
  }

  // `picks` strategy picks at equal loads (each worker re-scraped after its pick, so that the
  // local counts stay equal); the picks per worker of `workers`, in its order.
  std::vector<int> Shares(const std::vector<Worker>& workers, int picks) {
    std::unordered_map<WorkerKey, std::size_t> index;
    for (std::size_t i = 0; i < workers.size(); ++i) index.emplace(workers[i].key, i);
    std::vector<int> counts(workers.size(), 0);
    for (int k = 0; k < picks; ++k) {
      const PickOutcome out = pool_.TryPick(Request(), rng_(), now_);
      if (!out.picked()) continue;
      ++counts[index.at(out.worker().key)];
      Observe(out.worker().key, Scrape(kRunning, kBlocksFree));
    }
    return counts;
  }

  void ShareTable(const std::vector<Worker>& workers, const std::vector<int>& counts,
                  const std::vector<double>& joules) const {
    double weights = 0;
    int picks = 0;
    for (std::size_t i = 0; i < workers.size(); ++i) {
      weights += workers[i].weight;
      picks += counts[i];
    }
    const bool with_joules = !joules.empty();
    Say(Pad("worker", pod_width_) + (with_joules ? "  J/token" : "") + "  weight   share  picks" +
        "   share");
    for (std::size_t i = 0; i < workers.size() && i < kMaxRows; ++i) {
      const double weight_share = weights > 0 ? workers[i].weight / weights : 0;
      const double pick_share = picks > 0 ? static_cast<double>(counts[i]) / picks : 0;
      Say(Pad(workers[i].pod, pod_width_) + (with_joules ? Right(Fixed(joules[i], 3), 9) : "") +
          Right(std::to_string(workers[i].weight), 8) + Right(Percent(weight_share), 8) +
          Right(std::to_string(counts[i]), 7) + Right(Percent(pick_share), 8));
    }
    if (workers.size() > kMaxRows) {
      Say("... and " + std::to_string(workers.size() - kMaxRows) + " more workers");
    }
  }

  void StrategyShares() {
    const std::string name(eoc::routing::StrategyName(strategy_));
    Heading("a. strategy: 1,000 picks at equal loads (each worker re-scraped after its pick)");
    ShareTable(table_, Shares(table_, kStrategyPicks), {});

    // A publish with different weights: what JouleWeighted makes of workers whose marginal energy
    // per token differs (idle workers: weight = 1000 x the best J / J).
    std::vector<eoc::routing::WorkerLoad> loads;
    std::vector<double> joules;
    for (std::size_t i = 0; i < table_.size(); ++i) {
      joules.push_back(kA100JoulesPerToken * kJouleFactors.at(i % kJouleFactors.size()));
      loads.push_back({.load = {.marginal_joules_per_token = joules.back(), .available = true}});
    }
    const std::vector<std::int32_t> weights =
        eoc::routing::ComputeWeights(Strategy::kJouleWeighted, loads);
    std::vector<Worker> reweighed = table_;
    for (std::size_t i = 0; i < reweighed.size(); ++i) reweighed[i].weight = weights[i];
    Say("the same after a table with the weights JouleWeighted gives these marginal J/token:");
    Publish(reweighed);
    ScrapeAll();
    ShareTable(reweighed, Shares(reweighed, kStrategyPicks), joules);
    if (eoc::routing::UsesEqualWeights(strategy_)) {
      Say(name + " gives every worker that takes new work (weight above 0) an equal share");
    }
    Publish(table_);
    ScrapeAll();
    Say("(the published weights again from here on)");
  }

  PickRequest Alice() const {
    PickRequest request = Request();
    request.session = eoc::routing::SessionHashOf("alice");
    return request;
  }

  std::string Turn() { return "alice, turn " + std::to_string(++alice_turns_); }

  void Session() {
    Heading("b. session \"alice\": her first turn is placed (consistent hash) and bound there");
    for (int k = 0; k < 3; ++k) {
      const PickOutcome out = Pick(Turn(), Alice());
      if (out.picked()) alice_ = out.worker();
    }
  }

  bool NeedTwo() const {
    if (takers_ >= 2 && alice_) return true;
    Say("(skipped: this scene needs two workers that take new work)");
    return false;
  }

  void SessionOverflow() {
    Heading("c. alice's worker's KV cache fills: her next turn goes elsewhere, the binding stays");
    if (!NeedTwo()) return;
    ScrapeAll();
    Observe(alice_->key, Scrape(kRunning, kBlocksFull));
    Say("scrape: " + alice_->pod + " has " + std::to_string(kBlocksFull) +
        " KV blocks free (a request needs " + std::to_string(Blocks()) + ")");
    Pick(Turn(), Alice());
    Observe(alice_->key, Scrape(kRunning, kBlocksFree));
    Say("scrape: " + alice_->pod + " has " + std::to_string(kBlocksFree) + " free again");
    Pick(Turn(), Alice());
  }

  void Prefix() {
    const std::string p1 = Prompt("how do I scale a pool to zero?");
    const std::string p2 = Prompt("why was my request answered 429?");
    const std::string p3 = Prompt("what does JouleWeighted weigh?");
    const std::vector<BlockHash> h1 = eoc::routing::PrefixHashes(kModel, p1, kBlockSize);
    const std::vector<BlockHash> h2 = eoc::routing::PrefixHashes(kModel, p2, kBlockSize);
    const std::vector<BlockHash> h3 = eoc::routing::PrefixHashes(kModel, p3, kBlockSize);
    const auto shared = static_cast<std::size_t>(
        std::mismatch(h1.begin(), h1.end(), h2.begin(), h2.end()).first - h1.begin());
    Heading("d. prefix, no session: prompts that share a system prompt (their first " +
            std::to_string(shared) + " of " + std::to_string(h1.size()) + " blocks)");
    ScrapeAll();
    PickRequest request = Request();
    request.prefix = h1;
    const PickOutcome first = Pick("prompt 1", request);
    request.prefix = h2;
    Pick("prompt 2", request);
    if (!first.picked() || !NeedTwo()) return;
    const Worker& holder = first.worker();
    Observe(holder.key, Scrape(kRunningBusy, kBlocksFree));
    const double margin = pool_.options().prefix_load_margin;
    double rest = 1;
    for (const Worker& w : pool_.snapshot()->workers()) {
      if (w.key != holder.key) rest = std::min(rest, pool_.Busyness(w.key).value_or(1));
    }
    Say("scrape: that worker has " + Fixed(kRunningBusy, 0) + " running: busyness " +
        Fixed(pool_.Busyness(holder.key).value_or(0), 2) + ", the others " + Fixed(rest, 2) +
        " (loadMargin " + Fixed(margin, 2) + ")");
    request.prefix = h3;
    const PickOutcome third = Pick("prompt 3", request);
    if (third.picked() && third.reason == PickReason::kPrefix) {
      // The strategy's two weighted draws both fell on the holder: its choice was the holder.
      Say("(both of the strategy's weighted draws fell on that worker, so the prefix stood)");
    }
  }

  void WaitQueue() {
    Heading("e. every worker's KV cache full: picks wait (at most maxQueue " +
            std::to_string(kMaxQueue) + ", up to queueTimeoutSeconds " +
            std::to_string(kQueueTimeout.count()) + ")");
    ScrapeAll(kBlocksFull);
    Pick("request 1", Request());
    Pick("request 2", Request());
    Pick("request 3", Request());
    const Worker& first = pool_.snapshot()->worker(0);
    Say("scrape: " + first.pod + " has 2048 KV blocks free: the waiting go, oldest first");
    Observe(first.key, Scrape(kRunning, 2048));
    Observe(first.key, Scrape(kRunning, kBlocksFull));
    Say("scrape: " + first.pod + " is full again");
    Pick("request 4", Request());
    const auto deadline = pool_.NextDeadline();
    if (!deadline) return;
    const auto waited = std::chrono::duration_cast<std::chrono::seconds>(*deadline - now_);
    now_ = *deadline;
    Say(std::to_string(waited.count()) + " s later, Tick (housekeeping) at the deadline:");
    pool_.Tick(now_);
  }

  void WorkerLeaves() {
    Heading("f. alice's worker leaves the pool (a new snapshot without it)");
    if (!NeedTwo()) return;
    ScrapeAll();
    std::vector<Worker> rest;
    for (const Worker& w : table_) {
      if (w.key != alice_->key) rest.push_back(w);
    }
    Publish(rest);
    Say(alice_->pod + " left; alice's next turn is placed again and rebound");
    Pick(Turn(), Alice());
    Pick(Turn(), Alice());
  }

  const std::vector<Worker> table_;
  const Strategy strategy_;
  std::mt19937_64 rng_;
  const std::uint64_t seed_;
  eoc::routing::SessionBudget budget_;
  eoc::routing::PrefixBudget prefix_budget_;
  PoolState pool_;
  TimePoint now_ = TimePoint{} + std::chrono::hours(1);
  std::int64_t generation_ = 0;
  std::size_t pod_width_ = 6;  // "worker"
  std::size_t address_width_ = 0;
  std::size_t takers_ = 0;  // workers that take new work
  int alice_turns_ = 0;
  std::optional<Worker> alice_;  // where alice's session is bound
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "eoc-routing-tour: the routing engine at work on a routing table read from stdin, "
      "one worker a line: POD ADDRESS WEIGHT"};
  std::string strategy_name(eoc::routing::StrategyName(Strategy::kJouleWeighted));
  std::uint64_t seed = 1;
  app.add_option("--strategy", strategy_name, "routing.strategy: " + eoc::demo::StrategyNames())
      ->capture_default_str();
  app.add_option("--seed", seed, "seed of the picks' random numbers")->capture_default_str();
  bool shares_only = false;
  app.add_flag("--shares", shares_only,
               "only how 1,000 picks at equal loads fall on the table's weights");
  CLI11_PARSE(app, argc, argv);

  const std::optional<Strategy> strategy = eoc::routing::StrategyNamed(strategy_name);
  if (!strategy) {
    std::cerr << "eoc-routing-tour: --strategy " << Quote(strategy_name) << ": not one of "
              << eoc::demo::StrategyNames() << "\n";
    return 2;
  }
  std::vector<Row> rows;
  try {
    rows = eoc::demo::ReadTable(std::cin);
  } catch (const InputError& e) {
    std::cerr << "eoc-routing-tour: " << e.what() << "\n";
    return 2;
  }
  std::vector<Worker> workers;
  workers.reserve(rows.size());
  for (Row& row : rows) {
    workers.push_back(Worker{.key = eoc::routing::WorkerKeyOf(row.pod),
                             .pod = std::move(row.pod),
                             .address = std::move(row.address),
                             .weight = row.weight});
  }
  Tour tour(std::move(workers), *strategy, seed);
  if (shares_only) {
    tour.PickShares();
  } else {
    tour.Run();
  }
  return 0;
}
