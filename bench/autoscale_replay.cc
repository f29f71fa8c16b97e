// bench_autoscale_replay: the autoscaling policy (src/autoscale, the code the controller runs)
// replayed over a request trace through a simple queue model, one CSV row a tick, so that its
// decisions can be checked against another model of Ray Serve's policy, and so that a user can
// see what a set of parameters would have done to their own traffic.
//
//   bench_autoscale_replay --trace requests.csv --max-replicas 8 --csv out.csv [--json out.json]
//       [--speedup 1] [--tick 1] [--target-ongoing-requests 16 ... (every spec.autoscaling field,
//       each defaulting as the CRD does)] [--startup-seconds 15 ... (the model)]
//       [--boundary-ticks 0]
//
// The trace: the Azure LLM inference trace's CSV (TIMESTAMP,ContextTokens,GeneratedTokens) or
// Mooncake's JSONL, read by the simulator's reader (sim/trace.h); arrivals are divided by
// --speedup. The model: each replica runs up to --max-concurrency requests at once, a request
// taking its prompt tokens / --prefill-tokens-per-second + its output tokens *
// --seconds-per-output-token; more wait in the replica's queue. A request goes to the ready
// replica with the fewest ongoing, or waits in the pool's queue (the picks waiting on an empty
// pool) until one is ready. A replica started by a decision is ready --startup-seconds later; one
// removed stops taking work and leaves once its requests are done (the drain), or at once if it
// was still starting. Each tick every ready replica reports its ongoing requests (running +
// waiting) into the policy's look-back window; `total` is the window's sum plus the pool's queue.
//
// After the trace, --boundary-ticks more ticks (same policy, same timer, same clock) are driven by
// a seeded script instead of the model: totals at exact multiples of targetOngoingRequests (among
// them the ones where Ray's order of operations leaves a float a hair off the integer), loads held
// for exactly a delay, direction flips a tick before and after a delay, and an empty pool with and
// without requests waiting.
//
// Columns: time_s (seconds, 17 significant digits), ongoing (the total the policy saw, 17
// significant digits), current (ready workers), target (before the tick), decision (after it).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/defaults.h"
#include "autoscale/ongoing_window.h"
#include "autoscale/policy.h"
#include "sim/autoscaler_record.h"
#include "sim/trace.h"

namespace {

namespace autoscale = eoc::autoscale;
namespace sim = eoc::sim;

struct Request {
  double arrival = 0;  // seconds from the trace's first request, after the speedup
  double service = 0;  // seconds it runs once started
};

struct Model {
  double speedup = 1;
  double startup_seconds = 15;
  std::int32_t max_concurrency = 4;
  double prefill_tokens_per_second = 8000;
  double seconds_per_output_token = 0.03;
};

// The trace through the simulator's reader (sim/trace.h: the Azure CSV or Mooncake JSONL), as it
// is: no copies, no synthetic sessions or prefixes, arrivals divided by the speedup.
std::vector<Request> ReadTrace(const std::string& path, const Model& model) {
  sim::TraceOptions options;
  options.time_scale = 1 / model.speedup;
  options.sessions.share = 0;
  options.prefixes.shared_share = 0;
  options.block_size_tokens = 1 << 20;  // no prefix blocks: the queue model has no cache
  const sim::Trace trace = sim::ReadTraceFile(path, options);
  std::vector<Request> requests;
  requests.reserve(trace.requests.size());
  for (const sim::TraceRequest& r : trace.requests) {
    requests.push_back({.arrival = r.arrival_seconds,
                        .service = (r.prompt_tokens / model.prefill_tokens_per_second) +
                                   (r.output_tokens * model.seconds_per_output_token)});
  }
  return requests;
}

struct Row {
  double time = 0;
  double ongoing = 0;
  std::int32_t current = 0;
  std::int32_t target = 0;
  std::int32_t decision = 0;
};

// The pool in the queue model.
class Pool {
 public:
  explicit Pool(const Model& model) : model_(model) {}

  // Runs arrivals and completions up to `to`.
  void Advance(double to, const std::vector<Request>& requests, std::size_t& next) {
    for (;;) {
      const double arrival =
          next < requests.size() ? requests[next].arrival : std::numeric_limits<double>::infinity();
      Replica* ending = nullptr;
      double end = std::numeric_limits<double>::infinity();
      for (Replica& r : replicas_) {
        for (const double e : r.ends) {
          if (e < end) {
            end = e;
            ending = &r;
          }
        }
      }
      const double ready = NextReady();
      const double t = std::min({arrival, end, ready});
      if (t > to) break;
      if (t == end) {
        Finish(*ending, end);
      } else if (t == ready) {
        ReadyAt(ready);
      } else {
        Route(requests[next++].service, arrival);
      }
    }
  }

  // The ready replicas that take work, by name.
  std::vector<std::string> Ready() const {
    std::vector<std::string> names;
    for (const Replica& r : replicas_) {
      if (r.ready && !r.draining) names.push_back(r.name);
    }
    return names;
  }
  std::int32_t OngoingOf(const std::string& name) const {
    for (const Replica& r : replicas_) {
      if (r.name == name) return r.ongoing();
    }
    return 0;
  }
  std::size_t waiting() const { return waiting_.size(); }

  // Starts or removes replicas so that `replicas` are ready or starting.
  void ScaleTo(std::int32_t replicas, double now) {
    std::int32_t active = 0;
    for (const Replica& r : replicas_) active += r.draining ? 0 : 1;
    for (; active < replicas; ++active) {
      replicas_.push_back(
          {.name = "r" + std::to_string(next_id_++), .ready_at = now + model_.startup_seconds});
    }
    for (; active > replicas; --active) Remove();
  }

 private:
  struct Replica {
    std::string name;
    double ready_at = 0;
    bool ready = false;
    bool draining = false;
    std::vector<double> ends;  // running requests' finish times
    std::deque<double> queue;  // waiting requests' service times
    std::int32_t ongoing() const { return static_cast<std::int32_t>(ends.size() + queue.size()); }
  };

  double NextReady() const {
    double t = std::numeric_limits<double>::infinity();
    for (const Replica& r : replicas_) {
      if (!r.ready && !r.draining) t = std::min(t, r.ready_at);
    }
    return t;
  }

  void Start(Replica& r, double service, double now) const {
    if (static_cast<std::int32_t>(r.ends.size()) < model_.max_concurrency) {
      r.ends.push_back(now + service);
    } else {
      r.queue.push_back(service);
    }
  }

  Replica* LeastBusy() {
    Replica* best = nullptr;
    for (Replica& r : replicas_) {
      if (r.ready && !r.draining && (best == nullptr || r.ongoing() < best->ongoing())) best = &r;
    }
    return best;
  }

  void Route(double service, double now) {
    Replica* r = LeastBusy();
    if (r == nullptr) {
      waiting_.push_back(service);
      return;
    }
    Start(*r, service, now);
  }

  void ReadyAt(double now) {
    for (Replica& r : replicas_) {
      if (!r.ready && !r.draining && r.ready_at <= now) r.ready = true;
    }
    while (!waiting_.empty() && LeastBusy() != nullptr) {
      const double service = waiting_.front();
      waiting_.pop_front();
      Route(service, now);
    }
  }

  void Finish(Replica& r, double at) {
    r.ends.erase(std::find(r.ends.begin(), r.ends.end(), at));
    if (!r.queue.empty()) {
      r.ends.push_back(at + r.queue.front());
      r.queue.pop_front();
    }
    if (r.draining && r.ongoing() == 0) {
      std::erase_if(replicas_, [&](const Replica& x) { return &x == &r; });
    }
  }

  // The newest starting replica goes first; else the ready one with the fewest ongoing drains.
  void Remove() {
    for (auto it = replicas_.rbegin(); it != replicas_.rend(); ++it) {
      if (!it->ready && !it->draining) {
        replicas_.erase(std::next(it).base());
        return;
      }
    }
    Replica* r = LeastBusy();
    if (r == nullptr) return;
    r->draining = true;
    if (r->ongoing() == 0) std::erase_if(replicas_, [&](const Replica& x) { return &x == r; });
  }

  Model model_;
  std::vector<Replica> replicas_;
  std::deque<double> waiting_;
  std::int64_t next_id_ = 0;
};

struct Replay {
  autoscale::PolicyConfig policy;
  double look_back_seconds = 10;
  double tick = 1;
  autoscale::DelayTimer timer;
  std::int32_t target = 0;
  std::vector<Row> rows;

  Row Tick(double now, std::int32_t current, double total) {
    const autoscale::Decision d = autoscale::Decide(
        policy, {.now_seconds = now, .current = current, .target = target, .total = total}, timer);
    rows.push_back({.time = now,
                    .ongoing = total,
                    .current = current,
                    .target = target,
                    .decision = d.replicas});
    target = d.replicas;
    return rows.back();
  }
};

// The trace through the queue model; returns the time of the next tick.
double ReplayTrace(Replay& replay, const Model& model, const std::vector<Request>& requests,
                   std::int32_t initial_replicas) {
  Pool pool(model);
  autoscale::OngoingWindow window(replay.look_back_seconds);
  replay.target = initial_replicas;
  pool.ScaleTo(initial_replicas, -model.startup_seconds);  // ready at 0
  // After the last arrival, long enough for the pool to drain and go to zero.
  const double tail = replay.look_back_seconds + replay.policy.downscale_delay_seconds +
                      replay.policy.downscale_to_zero_delay_seconds + model.startup_seconds + 60;
  const double end = requests.back().arrival + tail;
  std::size_t next = 0;
  // The clock advances by adding the tick, as a control loop's does, so elapsed times drift a few
  // ulps off the delays (300 ticks of 0.1 s come to 29.99999999999986 s) and Ray's tolerance
  // counts.
  double now = 0;
  while (now <= end) {
    pool.Advance(now, requests, next);
    const std::vector<std::string> ready = pool.Ready();
    for (const std::string& name : ready) window.Record(name, now, pool.OngoingOf(name));
    window.Retain(ready);
    const double total = window.Over(ready, now, replay.look_back_seconds).total +
                         static_cast<double>(pool.waiting());
    const Row row = replay.Tick(now, static_cast<std::int32_t>(ready.size()), total);
    pool.ScaleTo(row.decision, now);
    now += replay.tick;
  }
  return now;
}

// The scripted ticks that hit the policy's boundaries, from `start`.
void ReplayBoundaries(Replay& replay, double start, std::int64_t count) {
  const double t = replay.policy.target_ongoing_requests;
  const auto ticks_of = [&](double seconds) {
    return static_cast<std::int64_t>(std::llround(seconds / replay.tick));
  };
  std::mt19937_64 random(20261204);
  const auto uniform = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(random);
  };
  double now = start;
  std::int64_t done = 0;
  std::int32_t current = 0;
  const auto hold = [&](std::int64_t n, std::int32_t cur, double total) {
    for (std::int64_t i = 0; i < n && done < count; ++i, ++done) {
      replay.Tick(now, cur, total);
      now += replay.tick;
    }
  };
  // Loads whose ratio Ray computes a hair above the integer, so that its ceiling is one more
  // replica, within the bounds (current 7 at 29 t: 29.000000000000004, so 30).
  std::vector<std::pair<std::int32_t, double>> hairs;
  for (std::int32_t c = 1; c <= replay.policy.max_replicas; ++c) {
    for (std::int32_t k = c + 1; k < replay.policy.max_replicas; ++k) {
      const double total = k * t;
      if (c * (total / (t * c)) > k) hairs.emplace_back(c, total);
    }
  }
  const std::int64_t up = ticks_of(replay.policy.upscale_delay_seconds);
  const std::int64_t down = ticks_of(replay.policy.downscale_delay_seconds);
  const std::int64_t zero = ticks_of(replay.policy.downscale_to_zero_delay_seconds);
  const std::int32_t most = replay.policy.max_replicas;
  while (done < count) {
    // Most segments start from a pool whose ready workers are its target, as a settled one is.
    current = std::max(1, replay.target);
    switch (uniform(0, 9)) {
      case 0:
      case 1:  // up to an exact multiple of t, held a tick short of the delay, onto it, or past it
        hold(up + uniform(0, 2), current,
             static_cast<double>(uniform(current + 1, std::min(most, current + 3))) * t);
        break;
      case 2:
      case 3:  // down to an exact multiple of t (zero included), likewise around the delay
        hold(down + uniform(0, 2), current,
             static_cast<double>(uniform(current / 3, current - 1)) * t);
        break;
      case 4:  // a load Ray's order of operations leaves a hair off the integer
        if (!hairs.empty()) {
          const auto& [c, total] = hairs[uniform(0, static_cast<std::int64_t>(hairs.size()) - 1)];
          hold(up + 1, c, total);
        }
        break;
      case 5:  // flips: up and down by turns, each a tick short of the delay or on it
        for (int i = 0; i < 3; ++i) {
          hold(up - uniform(0, 1), current, (current + 1) * t);
          hold(uniform(1, 3), current, std::max(0, current - 1) * t);
        }
        break;
      case 6:  // idle: one step down after the delay, or from one to zero after the zero delay
        hold((replay.target == 1 ? zero : down) + 1, current, 0);
        break;
      case 7:  // an empty pool: nothing waiting, then requests waiting
        hold(uniform(1, 8), 0, 0);
        hold(uniform(1, 8), 0, static_cast<double>(uniform(1, 5)));
        break;
      case 8:  // a steady tick (exactly current * t) in the middle of a rise restarts its delay
        hold(up / 2, current, (current + 1) * t);
        hold(1, current, current * t);
        hold(up + 1, current, (current + 1) * t);
        break;
      default:  // exactly at target: steady
        hold(uniform(1, 5), current, current * t);
        break;
    }
  }
}

void WriteCsv(const std::string& path, const std::vector<Row>& rows) {
  std::vector<sim::AutoscalerTick> ticks;
  ticks.reserve(rows.size());
  for (const Row& r : rows) {
    ticks.push_back({.seconds = r.time,
                     .total = r.ongoing,
                     .current = r.current,
                     .target = r.target,
                     .decision = r.decision});
  }
  std::ofstream out(path);
  out << sim::RecordCsv(ticks, /*complete_column=*/false);
  if (!out) throw std::runtime_error(path + ": cannot write");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Replays a request trace through the autoscaling policy, one CSV row a tick");
  std::string trace;
  std::string csv_path;
  std::string json_path;
  std::string made_by;
  Model model;
  Replay replay;
  // Every default is the CRD's (and the controller's tick, 1 s), so a replay without flags is
  // what a pool with only maxReplicas set would do.
  namespace defaults = eoc::api::defaults;
  replay.policy = {.min_replicas = defaults::kMinReplicas,
                   .target_ongoing_requests = defaults::kTargetOngoingRequests,
                   .upscale_delay_seconds = defaults::kUpscaleDelaySeconds,
                   .downscale_delay_seconds = defaults::kDownscaleDelaySeconds,
                   .downscale_to_zero_delay_seconds = -1,  // = downscaleDelaySeconds
                   .upscaling_factor = defaults::kUpscalingFactor,
                   .downscaling_factor = defaults::kDownscalingFactor};
  replay.look_back_seconds = defaults::kLookBackPeriodSeconds;
  std::int32_t initial_replicas = 1;
  std::int64_t boundary_ticks = 0;
  autoscale::PolicyConfig& p = replay.policy;
  app.add_option("--trace", trace, "requests: Azure CSV or Mooncake JSONL")->required();
  app.add_option("--csv", csv_path, "where the ticks go")->required();
  app.add_option("--json", json_path, "where the parameters and the command go");
  app.add_option("--made-by", made_by, "what ran this command, for the JSON");
  app.add_option("--speedup", model.speedup, "arrival times divided by this")
      ->check(CLI::PositiveNumber);
  app.add_option("--tick", replay.tick, "seconds between ticks")->check(CLI::PositiveNumber);
  app.add_option("--startup-seconds", model.startup_seconds, "a new replica's start")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-concurrency", model.max_concurrency, "requests a replica runs at once")
      ->check(CLI::PositiveNumber);
  app.add_option("--prefill-tokens-per-second", model.prefill_tokens_per_second)
      ->check(CLI::PositiveNumber);
  app.add_option("--seconds-per-output-token", model.seconds_per_output_token)
      ->check(CLI::NonNegativeNumber);
  app.add_option("--initial-replicas", initial_replicas)->check(CLI::NonNegativeNumber);
  app.add_option("--boundary-ticks", boundary_ticks, "scripted ticks after the trace")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--min-replicas", p.min_replicas)->check(CLI::NonNegativeNumber);
  app.add_option("--max-replicas", p.max_replicas)->required()->check(CLI::PositiveNumber);
  app.add_option("--target-ongoing-requests", p.target_ongoing_requests)
      ->check(CLI::PositiveNumber);
  app.add_option("--upscale-delay-seconds", p.upscale_delay_seconds)->check(CLI::NonNegativeNumber);
  app.add_option("--downscale-delay-seconds", p.downscale_delay_seconds)
      ->check(CLI::NonNegativeNumber);
  app.add_option("--downscale-to-zero-delay-seconds", p.downscale_to_zero_delay_seconds,
                 "default: --downscale-delay-seconds")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--upscaling-factor", p.upscaling_factor)->check(CLI::PositiveNumber);
  app.add_option("--downscaling-factor", p.downscaling_factor)->check(CLI::PositiveNumber);
  app.add_option("--look-back-period-seconds", replay.look_back_seconds)
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (p.downscale_to_zero_delay_seconds < 0) {
    p.downscale_to_zero_delay_seconds = p.downscale_delay_seconds;
  }
  if (p.min_replicas > p.max_replicas) {
    std::cerr << "bench_autoscale_replay: --min-replicas is above --max-replicas\n";
    return 2;
  }
  try {
    const std::vector<Request> requests = ReadTrace(trace, model);
    const double next = ReplayTrace(replay, model, requests, initial_replicas);
    const std::size_t trace_rows = replay.rows.size();
    ReplayBoundaries(replay, next, boundary_ticks);
    WriteCsv(csv_path, replay.rows);
    std::int32_t lowest = std::numeric_limits<std::int32_t>::max();
    std::int32_t highest = 0;
    for (std::size_t i = 0; i < trace_rows; ++i) {
      lowest = std::min(lowest, replay.rows[i].decision);
      highest = std::max(highest, replay.rows[i].decision);
    }
    std::cerr << "bench_autoscale_replay: " << replay.rows.size() << " ticks (" << trace_rows
              << " over " << requests.size() << " requests, decisions " << lowest << " to "
              << highest << "; " << replay.rows.size() - trace_rows << " scripted) in " << csv_path
              << "\n";
    if (!json_path.empty()) {
      // The command, less where it wrote (which changes nothing recorded) and --made-by.
      std::string command = "bench_autoscale_replay";
      for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--csv" || arg == "--json" || arg == "--made-by") {
          ++i;
          continue;
        }
        command += " " + arg;
      }
      nlohmann::json autoscaling = sim::PolicyJson(p);
      autoscaling["initialReplicas"] = initial_replicas;
      autoscaling["lookBackPeriodSeconds"] = replay.look_back_seconds;
      const nlohmann::json doc = {
          {"command", command},
          {"madeBy", made_by},
          {"tickSeconds", replay.tick},
          {"autoscaling", autoscaling},
          {"model",
           {{"speedup", model.speedup},
            {"startupSeconds", model.startup_seconds},
            {"maxConcurrency", model.max_concurrency},
            {"prefillTokensPerSecond", model.prefill_tokens_per_second},
            {"secondsPerOutputToken", model.seconds_per_output_token}}},
          {"rows", {{"trace", trace_rows}, {"scripted", replay.rows.size() - trace_rows}}},
          {"columns", "time_s,ongoing,current,target,decision"}};
      std::ofstream out(json_path);
      out << doc.dump(2) << "\n";
      if (!out) throw std::runtime_error(json_path + ": cannot write");
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_autoscale_replay: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
