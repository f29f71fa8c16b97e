#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <queue>
#include <random>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "autoscale/ongoing_window.h"
#include "autoscale/policy.h"
#include "common/mix64.h"
#include "controller/pool_reconciler.h"
#include "controller/pool_scaler.h"
#include "controller/pool_status.h"
#include "controller/pool_weights.h"
#include "controller/routing_config.h"
#include "controller/scale_in.h"
#include "controller/scrape_page.h"
#include "controller/scrape_pool.h"
#include "controller/workers.h"
#include "routing/ids.h"
#include "routing/pool_directory.h"
#include "routing/weight_keeper.h"
#include "sim/sim_worker.h"

namespace eoc::sim {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

// Simulated seconds on the steady clock the controller's code reads (a day in, so that no
// computed "some time ago" falls before the clock's zero).
SteadyTime At(double seconds) {
  return SteadyTime{} + std::chrono::hours(24) +
         std::chrono::duration_cast<SteadyTime::duration>(std::chrono::duration<double>(seconds));
}

enum class EventKind : std::uint8_t { kArrival, kStepDone, kReady, kScrape, kTick };

struct Event {
  double at = 0;
  std::uint64_t seq = 0;  // ties run in the order they were scheduled
  EventKind kind = EventKind::kTick;
  std::size_t arg = 0;  // the request (arrival) or the worker (step, ready)
  bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

// The maps a pool's pages are read with, as the scrape loop makes them.
controller::PageMaps MapsOf(const api::InferencePool& pool) {
  const controller::ScrapePool scrape = controller::ScrapePoolOf(pool, {}, {}, {});
  return controller::PageMapsOf(controller::EngineMapOf(scrape.engine, scrape.generic_names),
                                scrape.energy_source);
}

enum class Outcome : std::uint8_t { kOpen, kFinished, kShed, kTimedOut };

struct RequestState {
  Outcome outcome = Outcome::kOpen;
  std::int32_t worker = -1;
  double first_token = -1;
  double finished = -1;
};

class Run {
 public:
  Run(const Scenario& scenario, const Trace& trace, const std::vector<PowerProfile>& profiles,
      const Policy& policy, const SimulateOptions& options);
  RunReport Go();

 private:
  // The world.
  void Schedule(double at, EventKind kind, std::size_t arg = 0);
  std::size_t AddWorker(std::size_t group, double now, bool ready);
  void OnArrival(std::size_t i);  // i: the request's index in the trace
  void Route(std::size_t i);      // a baseline's choice in place of a pick
  void OnPicked(std::size_t i, const routing::PickOutcome& out);
  void Dispatch(std::size_t i, std::size_t w);  // w: the worker's index
  void OnStepDone(std::size_t w);
  void TakeRefused(SimWorker& w);
  void Resolve(std::size_t i, Outcome outcome, std::string_view why = {});
  std::map<std::string, double> Grid() const;  // each zone's intensity now
  EngineParams EngineFor(const AcceleratorClass& accelerator) const;
  // The controller's side.
  void Membership();
  void Scrape();
  void Lead();
  void Autoscale();
  void Rescale();  // the target group's pods brought to target_: drains, removals, new pods
  void Drain();
  void Tick();
  // Accounting.
  void CountReplicas();
  void RemoveWorker(std::size_t w);  // the pod goes: its draw stops, pod-seconds counted
  // The state's last scraped loads (and picks since), by worker.
  std::unordered_map<routing::WorkerKey, routing::PoolState::ObservedLoad> LoadsByKey() const;
  void TakeSample();
  RunReport Report();

  const Scenario& scenario_;
  const Trace& trace_;
  const std::vector<PowerProfile>& profiles_;
  const SimulateOptions& options_;
  const Policy& policy_;
  api::InferencePool pool_;
  std::string pool_key_;
  std::unique_ptr<BaselineRouter> baseline_;  // set: a peer's router places the requests
  // What the baseline last read of each worker's metrics (by worker index), and when.
  struct RouterReading {
    double at = -1;
    EngineFigures figures;
  };
  std::vector<RouterReading> router_readings_;
  std::mt19937_64 rng_;

  double now_ = 0;
  std::uint64_t seq_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  double last_arrival_ = 0;
  std::int64_t open_ = 0;  // requests not yet resolved
  bool ended_ = false;

  std::vector<std::unique_ptr<SimWorker>> workers_;
  std::vector<std::int32_t> group_count_;  // pods made per group, for names
  struct GroupPlace {
    std::size_t accelerator = 0;  // the group's class, an index into scenario_.accelerators
    const Zone* zone = nullptr;
  };
  std::vector<GroupPlace> places_;  // by group
  std::map<std::string, kube::NodeView> nodes_;
  std::unordered_map<routing::WorkerKey, std::size_t> by_key_;
  controller::PoolMembers members_;
  std::vector<RequestState> requests_;

  routing::SessionBudget budget_{4'000'000};
  routing::PrefixBudget prefix_budget_{4'000'000};
  routing::PoolDirectory directory_{budget_, prefix_budget_};
  std::shared_ptr<routing::PoolState> state_;
  routing::WeightKeeper keeper_;
  SteadyTime published_at_;
  controller::PageMaps maps_;
  std::unordered_map<routing::WorkerKey, controller::WorkerReadings> readings_;

  // The autoscaler.
  std::optional<std::size_t> target_group_;
  autoscale::OngoingWindow window_;
  autoscale::DelayTimer timer_;
  std::int32_t target_ = 0;
  int last_direction_ = 0;

  // Accounting.
  RunReport report_;
  std::int32_t live_pods_ = 0;
  double counted_until_ = 0;
  double next_sample_ = 0;
  double next_progress_ = 60;
  double imbalance_sum_ = 0;
  double capacity_imbalance_sum_ = 0;
  std::int64_t imbalance_n_ = 0;
  std::vector<double> ttft_;
  std::vector<double> tpot_;
  std::vector<double> e2e_;
  std::int64_t slo_met_ = 0;
  std::int64_t prefix_queries_ = 0;
  std::int64_t prefix_hits_ = 0;
};

Run::Run(const Scenario& scenario, const Trace& trace, const std::vector<PowerProfile>& profiles,
         const Policy& policy, const SimulateOptions& options)
    : scenario_(scenario),
      trace_(trace),
      profiles_(profiles),
      options_(options),
      policy_(policy),
      pool_(policy.pool),
      rng_(scenario.seed),
      keeper_(std::chrono::seconds(std::max(1, policy.pool.spec.metrics.interval_seconds))),
      maps_(MapsOf(policy.pool)),
      window_(std::max(1e-3, policy.pool.spec.autoscaling.look_back_period_seconds)) {
  if (profiles_.size() != scenario_.accelerators.size()) {
    throw std::invalid_argument("a measured profile is needed for every accelerator class");
  }
  if (scenario_.fleet.empty()) throw std::invalid_argument("the fleet has no worker group");
  if (pool_.spec.energy.profiles.empty()) {
    pool_.spec.energy.profiles = MeasuredEnergyProfiles(scenario_, profiles_);
  }
  pool_key_ = controller::PoolKey(pool_);
  report_.policy = policy.name;
  report_.strategy = std::string(StrategyName(pool_.spec.routing.strategy));
  if (policy.baseline) {
    BaselineSpec spec = *policy.baseline;
    spec.block_tokens = trace_.block_size_tokens;  // what the trace's prefix blocks hold
    baseline_ = MakeBaseline(spec);
    report_.strategy = std::string(ToString(policy.baseline->kind));
  }
  report_.sample_seconds = options_.sample_seconds;
  requests_.resize(trace_.requests.size());
  open_ = static_cast<std::int64_t>(trace_.requests.size());
  group_count_.assign(scenario_.fleet.size(), 0);
  for (std::size_t g = 0; g < scenario_.fleet.size(); ++g) {
    const WorkerGroup& group = scenario_.fleet[g];
    if (group.scale_target) target_group_ = g;
    const auto a =
        std::find_if(scenario_.accelerators.begin(), scenario_.accelerators.end(),
                     [&](const AcceleratorClass& c) { return c.name == group.accelerator; });
    const auto z = std::find_if(scenario_.zones.begin(), scenario_.zones.end(),
                                [&](const Zone& zone) { return zone.name == group.zone; });
    places_.push_back(
        {.accelerator = static_cast<std::size_t>(a - scenario_.accelerators.begin()), .zone = &*z});
    nodes_.emplace("node-" + group.name,
                   NodeOf("node-" + group.name, *a, *z, pool_.spec.carbon.zone_label));
  }
  // Not written since this replica leads: as if long enough ago for anything material.
  published_at_ = At(0) - std::chrono::seconds(std::max(
                              1, static_cast<int>(pool_.spec.routing.publish_interval_seconds)));
}

void Run::Schedule(double at, EventKind kind, std::size_t arg) {
  events_.push({.at = at, .seq = seq_++, .kind = kind, .arg = arg});
}

std::size_t Run::AddWorker(std::size_t g, double now, bool ready) {
  const WorkerGroup& group = scenario_.fleet[g];
  const std::size_t a = places_[g].accelerator;
  const std::size_t index = workers_.size();
  const std::int32_t n = group_count_[g]++;
  workers_.push_back(std::make_unique<SimWorker>(
      SimWorkerSpec{.name = group.name + "-" + std::to_string(n),
                    .group = g,
                    .accelerator = a,
                    .accelerator_class = &scenario_.accelerators[a],
                    .engine = EngineFor(scenario_.accelerators[a]),
                    .zone = places_[g].zone,
                    .profile = &profiles_[a],
                    .pod_ip = "10." + std::to_string(1 + index / 65536) + "." +
                              std::to_string(index / 256 % 256) + "." + std::to_string(index % 256),
                    .node = "node-" + group.name,
                    .created_seconds = now,
                    .ready = ready,
                    .model = pool_.spec.models.empty() ? "sim" : pool_.spec.models.front()}));
  CountReplicas();
  ++live_pods_;
  if (!ready) Schedule(now + scenario_.cold_start_seconds, EventKind::kReady, index);
  return index;
}

EngineParams Run::EngineFor(const AcceleratorClass& accelerator) const {
  EngineParams params = accelerator.engine;
  params.prefix_block_tokens = trace_.block_size_tokens;  // what the trace's prefix hashes name
  return params;
}

std::map<std::string, double> Run::Grid() const {
  std::map<std::string, double> grid;
  for (const Zone& z : scenario_.zones) grid[z.name] = z.GramsPerKwhAt(now_);
  return grid;
}

// ---- requests -------------------------------------------------------------------------------

void Run::OnArrival(std::size_t i) {
  const TraceRequest& r = trace_.requests[i];
  if (baseline_) {
    Route(i);
    return;
  }
  std::optional<routing::SessionHash> session;
  if (r.session != 0) session = routing::SessionHashOf("session-" + std::to_string(r.session));
  const routing::PickRequest request{.model = {},
                                     .session = session,
                                     .prefix = r.prefix_blocks,
                                     .prompt_tokens = r.prompt_tokens,
                                     .expected_tokens = 0};
  const auto timeout = std::chrono::duration_cast<SteadyTime::duration>(
      std::chrono::duration<double>(pool_.spec.routing.admission.queue_timeout_seconds));
  const routing::PickOutcome out =
      state_->Pick(request, rng_(), At(now_),
                   {.deadline = At(now_) + timeout, .make_done = [this, i] {
                      return [this, i](const routing::PickOutcome& o) { OnPicked(i, o); };
                    }});
  if (out.status != routing::PickStatus::kQueued) OnPicked(i, out);
}

void Run::Route(std::size_t i) {
  // A peer's router knows the pods its endpoints list (ready, and not yet being removed: a drained
  // pod has left them), its own requests in flight to each, and (for those that read them) the
  // engines' metrics.
  std::vector<RouterWorker> views;  // id: the worker's index
  router_readings_.resize(workers_.size());
  for (const routing::Worker& w : members_.workers) {
    const std::size_t index = by_key_.at(w.key);
    if (workers_[index]->draining) continue;
    // A router that reads the engines' metrics re-reads them at its refresh interval.
    RouterReading& seen = router_readings_[index];
    if (seen.at < 0 || now_ - seen.at >= policy_.baseline->scorer.metrics_refresh_seconds) {
      seen = {.at = now_, .figures = workers_[index]->figures()};
    }
    views.push_back(
        {.id = index,
         .outstanding = workers_[index]->in_flight(),
         .waiting = seen.figures.waiting,
         .kv_cache_usage = seen.figures.kv_cache_usage,
         .kv_capacity_tokens = seen.figures.kv_blocks_total * seen.figures.kv_block_tokens});
  }
  if (views.empty()) {
    Resolve(i, Outcome::kShed, "no-worker");
    return;
  }
  const std::size_t chosen = baseline_->Choose(trace_.requests[i], views, rng_());
  ++report_.pick_reasons[report_.strategy];  // the baseline's kind
  Dispatch(i, views.at(chosen).id);
}

void Run::OnPicked(std::size_t i, const routing::PickOutcome& out) {
  if (out.picked()) {
    ++report_.pick_reasons[std::string(routing::ToString(out.reason))];
    const auto w = by_key_.find(out.worker().key);
    if (w == by_key_.end() || workers_[w->second]->gone()) {
      Resolve(i, Outcome::kShed, "picked-gone-worker");
      return;
    }
    Dispatch(i, w->second);
  } else if (out.status == routing::PickStatus::kTimedOut) {
    Resolve(i, Outcome::kTimedOut);
  } else {
    Resolve(i, Outcome::kShed, routing::ToString(out.status));
  }
}

void Run::Dispatch(std::size_t i, std::size_t w) {
  const TraceRequest& r = trace_.requests[i];
  requests_[i].worker = static_cast<std::int32_t>(w);
  SimWorker& worker = *workers_[w];
  ++report_.classes[scenario_.accelerators[worker.spec().accelerator].name].requests;
  const bool was_stepping = worker.stepping();
  worker.Admit({.id = i,
                .prompt_tokens = std::max(1, r.prompt_tokens),
                .output_tokens = std::max(1, r.output_tokens),
                .prefix_blocks = r.prefix_blocks},
               now_);
  TakeRefused(worker);
  if (!was_stepping && worker.stepping()) Schedule(worker.step_end(), EventKind::kStepDone, w);
}

void Run::OnStepDone(std::size_t w) {
  SimWorker& worker = *workers_[w];
  if (worker.gone() || !worker.stepping() || worker.step_end() != now_) return;
  const StepResult step = worker.FinishStep(now_);
  for (const std::uint64_t id : step.first_token) requests_[id].first_token = now_;
  for (const std::uint64_t id : step.finished) {
    requests_[id].finished = now_;
    Resolve(id, Outcome::kFinished);
  }
  TakeRefused(worker);
  if (worker.stepping()) Schedule(worker.step_end(), EventKind::kStepDone, w);
}

void Run::TakeRefused(SimWorker& w) {
  for (const std::uint64_t id : w.TakeRefused()) Resolve(id, Outcome::kShed, "engine-too-large");
}

void Run::Resolve(std::size_t i, Outcome outcome, std::string_view why) {
  RequestState& s = requests_[i];
  if (s.outcome != Outcome::kOpen) return;
  s.outcome = outcome;
  --open_;
  const TraceRequest& r = trace_.requests[i];
  if (outcome == Outcome::kShed) {
    ++report_.shed;
    ++report_.refusals[std::string(why)];
  } else if (outcome == Outcome::kTimedOut) {
    ++report_.timed_out;
  } else {
    ++report_.finished;
    const std::int32_t output = std::max(1, r.output_tokens);
    report_.prompt_tokens += r.prompt_tokens;
    report_.output_tokens += output;
    report_.classes[scenario_.accelerators[workers_[s.worker]->spec().accelerator].name]
        .output_tokens += output;
    const double ttft = s.first_token - r.arrival_seconds;
    const double e2e = s.finished - r.arrival_seconds;
    ttft_.push_back(ttft);
    e2e_.push_back(e2e);
    report_.ttft_samples.push_back(ttft);
    report_.e2e_samples.push_back(e2e);
    double tpot = 0;
    if (output > 1) {
      tpot = (s.finished - s.first_token) / (output - 1);
      tpot_.push_back(tpot);
    }
    if (ttft <= scenario_.slo.ttft_seconds && tpot <= scenario_.slo.tpot_seconds) ++slo_met_;
  }
}

// ---- the controller's side ------------------------------------------------------------------

void Run::Membership() {
  std::vector<std::shared_ptr<const kube::PodView>> pods;
  for (const auto& w : workers_) {
    if (!w->gone()) pods.push_back(w->pod());
  }
  members_ = controller::SelectWorkers(pool_, pods, [this](const std::string& name) {
    const auto it = nodes_.find(name);
    return it == nodes_.end() ? nullptr : std::make_shared<const kube::NodeView>(it->second);
  });
  by_key_.clear();
  std::unordered_map<std::string, std::size_t> by_pod;
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    if (!workers_[i]->gone()) by_pod.emplace(workers_[i]->pod_key(), i);
  }
  for (const routing::Worker& w : members_.workers) by_key_.emplace(w.key, by_pod.at(w.pod));
  controller::UpdatePoolDirectory(directory_, nullptr, pool_, members_.workers, At(now_));
  state_ = directory_.Find(pool_key_);
  Lead();
}

void Run::Scrape() {
  const controller::ScrapePool scrape = controller::ScrapePoolOf(pool_, members_, Grid(), {});
  // Readings of workers that left go with them.
  std::erase_if(readings_, [&](const auto& entry) { return !by_key_.contains(entry.first); });
  for (const controller::ScrapeTarget& target : scrape.targets) {
    SimWorker& w = *workers_[by_key_.at(target.key)];
    const auto [it, added] = readings_.try_emplace(target.key);
    controller::WorkerReadings& r = it->second;
    if (added) r.energy = signals::WorkerEnergy(target.profile);  // afresh, as the scrape loop's
    const controller::FetchResult fetched{.error = std::nullopt, .body = w.Page(now_)};
    const controller::ScrapeReading reading = controller::ReadScrape(fetched, maps_, target.pod);
    if (reading.result != controller::ScrapeResult::kOk) {
      throw std::logic_error("the simulated page of " + target.pod +
                             " did not read: " + reading.message);
    }
    const routing::Load load =
        controller::ObserveGoodScrape(reading, At(now_), target.grid_g_per_kwh, r);
    if (state_) state_->ObserveLoad(target.key, load, At(now_));
  }
  Lead();
}

void Run::Lead() {
  if (!state_) return;
  std::vector<routing::Worker> weighed = controller::WeighWorkers(
      pool_.spec, members_.workers, state_->Loads(), Grid(), keeper_, At(now_));
  std::vector<std::string> draining;
  for (const auto& w : workers_) {
    if (!w->gone() && w->draining) draining.push_back(w->spec().name);
  }
  std::sort(draining.begin(), draining.end());
  controller::MarkDraining(weighed, draining);
  const routing::PublishDecision decision = controller::DecideTablePublish(
      pool_, controller::PublishedWorkers(weighed), published_at_, At(now_));
  if (!decision.publish()) return;
  pool_.status.routing = controller::BuildRoutingTable(pool_.spec, weighed, pool_.status.routing);
  published_at_ = At(now_);
  controller::UpdatePoolDirectory(directory_, nullptr, pool_, members_.workers, At(now_));
  state_ = directory_.Find(pool_key_);
}

void Run::Autoscale() {
  if (!target_group_ || !pool_.spec.autoscaling.enabled || !state_) return;
  const double interval = std::max(1, pool_.spec.metrics.interval_seconds);
  std::vector<std::string> ready;
  std::unordered_map<routing::WorkerKey, const std::string*> pods;
  for (const routing::Worker& w : members_.workers) {
    if (!workers_[by_key_.at(w.key)]->draining) ready.push_back(w.pod);
    pods.emplace(w.key, &w.pod);
  }
  for (const auto& observed : state_->Loads()) {
    const auto it = pods.find(observed.worker);
    if (it == pods.end() || !observed.load.available) continue;
    window_.Record(*it->second, now_, observed.load.running + observed.load.waiting);
  }
  window_.Retain(ready);
  const autoscale::PolicyInput input = autoscale::InputAt(
      window_, ready, static_cast<double>(state_->Waiting()), now_, 3.0 * interval, target_);
  const autoscale::Decision d =
      autoscale::Decide(controller::PolicyOf(pool_.spec.autoscaling), input, timer_);
  if (options_.ticks != nullptr) {
    options_.ticks->push_back({.seconds = now_,
                               .total = input.total,
                               .complete = input.complete,
                               .current = input.current,
                               .target = input.target,
                               .decision = d.replicas});
  }
  if (d.replicas == target_) return;
  const int direction = d.replicas > target_ ? 1 : -1;
  report_.scale_events.push_back({.seconds = now_, .from = target_, .to = d.replicas});
  (direction > 0 ? report_.scale_ups : report_.scale_downs) += 1;
  if (last_direction_ != 0 && direction != last_direction_) ++report_.direction_flips;
  last_direction_ = direction;
  target_ = d.replicas;
  Rescale();
}

void Run::Rescale() {
  // The target group's pods: those beyond the target are drained (a drain already under way is
  // re-planned: a decision that shrinks less drains fewer, one that no longer shrinks none), and
  // new pods make up a shortfall.
  std::vector<std::size_t> live;
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    const SimWorker& w = *workers_[i];
    if (!w.gone() && w.spec().group == *target_group_) live.push_back(i);
  }
  const auto wanted = static_cast<std::size_t>(target_);
  std::vector<std::string> chosen;
  if (live.size() > wanted) {
    const auto loads = LoadsByKey();
    std::vector<controller::ScaleInPod> candidates;
    for (const std::size_t i : live) {
      const SimWorker& w = *workers_[i];
      const auto l = loads.find(routing::WorkerKeyOf(w.pod_key()));
      const double in_flight = l == loads.end() ? 0.0
                                                : l->second.load.running + l->second.load.waiting +
                                                      l->second.picks_since_scrape;
      candidates.push_back(controller::ScaleInPodOf(*w.pod(), in_flight));
    }
    chosen = controller::PodsToDrain(controller::ScaleInOrder::kDeletionCost, std::move(candidates),
                                     live.size() - wanted);
  }
  for (const std::size_t i : live) {
    SimWorker& w = *workers_[i];
    const bool drain = std::find(chosen.begin(), chosen.end(), w.spec().name) != chosen.end();
    if (drain && !w.ready()) {  // a pod still starting serves nothing: it goes at once
      RemoveWorker(i);
    } else if (drain && !w.draining) {
      w.draining = true;
      w.drain_since = now_;
    } else if (!drain) {
      w.draining = false;
    }
  }
  for (std::size_t n = live.size(); n < wanted; ++n) AddWorker(*target_group_, now_, false);
  Membership();
}

void Run::Drain() {
  const double interval = std::max(1, pool_.spec.metrics.interval_seconds);
  std::vector<std::size_t> draining;
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    if (!workers_[i]->gone() && workers_[i]->draining) draining.push_back(i);
  }
  if (draining.empty() || !state_) return;
  const auto observed = LoadsByKey();
  // The controller writes /scale once every drained pod's scraped load is zero (seen a scrape
  // interval after the drain began, with no pick since), or at the drain timeout.
  bool idle = true;
  bool expired = false;
  for (const std::size_t i : draining) {
    const SimWorker& w = *workers_[i];
    const auto o = observed.find(routing::WorkerKeyOf(w.pod_key()));
    const bool zero = o != observed.end() && o->second.load.available &&
                      o->second.load.running + o->second.load.waiting == 0 &&
                      o->second.picks_since_scrape == 0;
    idle = idle && zero && now_ - w.drain_since >= interval;
    expired = expired || now_ - w.drain_since >= pool_.spec.autoscaling.drain_timeout_seconds;
  }
  if (!idle && !expired) return;
  for (const std::size_t i : draining) RemoveWorker(i);
  // What the removed pods still held is cut off.
  for (std::size_t r = 0; r < requests_.size(); ++r) {
    if (requests_[r].outcome == Outcome::kOpen && requests_[r].worker >= 0 &&
        workers_[requests_[r].worker]->gone()) {
      Resolve(r, Outcome::kTimedOut);
    }
  }
  Membership();
}

void Run::Tick() {
  directory_.Tick(At(now_));
  Lead();
  Autoscale();
  Drain();
  // Imbalance over the ready workers' requests in flight, by count and by capacity.
  std::int64_t sum = 0;
  std::int64_t most = 0;
  std::int64_t n = 0;
  double capacity = 0;
  double most_per_capacity = 0;
  for (const auto& w : workers_) {
    if (w->gone() || !w->ready() || w->draining) continue;
    sum += w->in_flight();
    most = std::max(most, w->in_flight());
    ++n;
    const double c = w->capacity();
    capacity += c;
    most_per_capacity = std::max(most_per_capacity, static_cast<double>(w->in_flight()) / c);
  }
  if (sum > 0) {
    imbalance_sum_ +=
        static_cast<double>(most) / (static_cast<double>(sum) / static_cast<double>(n));
    capacity_imbalance_sum_ += most_per_capacity / (static_cast<double>(sum) / capacity);
    ++imbalance_n_;
  }
  if (now_ >= next_sample_) {
    TakeSample();
    next_sample_ += options_.sample_seconds;
  }
  if (options_.progress && now_ >= next_progress_) {
    options_.progress(now_, last_arrival_);
    next_progress_ += 60;
  }
}

// ---- accounting -----------------------------------------------------------------------------

void Run::RemoveWorker(std::size_t w) {
  CountReplicas();
  workers_[w]->Remove(now_);
  --live_pods_;
}

std::unordered_map<routing::WorkerKey, routing::PoolState::ObservedLoad> Run::LoadsByKey() const {
  std::unordered_map<routing::WorkerKey, routing::PoolState::ObservedLoad> loads;
  for (const auto& o : state_->Loads()) loads.emplace(o.worker, o);
  return loads;
}

void Run::CountReplicas() {
  report_.replica_seconds += live_pods_ * (now_ - counted_until_);
  counted_until_ = now_;
}

void Run::TakeSample() {
  Sample s{.seconds = now_, .target = target_};
  for (const auto& w : workers_) {
    if (w->gone()) continue;
    ++s.replicas;
    if (w->ready() && !w->draining) ++s.ready;
    s.in_flight += w->in_flight();
    s.watts += w->watts();
  }
  s.waiting = state_ ? static_cast<std::int64_t>(state_->Waiting()) : 0;
  report_.samples.push_back(s);
}

RunReport Run::Go() {
  for (std::size_t g = 0; g < scenario_.fleet.size(); ++g) {
    for (std::int32_t n = 0; n < scenario_.fleet[g].replicas; ++n) AddWorker(g, 0, true);
  }
  if (target_group_) target_ = scenario_.fleet[*target_group_].replicas;
  Membership();
  Scrape();
  for (std::size_t i = 0; i < trace_.requests.size(); ++i) {
    Schedule(trace_.requests[i].arrival_seconds, EventKind::kArrival, i);
    last_arrival_ = std::max(last_arrival_, trace_.requests[i].arrival_seconds);
  }
  const double interval = std::max(1, pool_.spec.metrics.interval_seconds);
  Schedule(interval, EventKind::kScrape);
  Schedule(1, EventKind::kTick);
  const double cut_off = last_arrival_ + options_.drain_seconds;
  while (!events_.empty()) {
    const Event e = events_.top();
    events_.pop();
    if (e.at > cut_off) break;
    now_ = e.at;
    switch (e.kind) {
      case EventKind::kArrival:
        OnArrival(e.arg);
        break;
      case EventKind::kStepDone:
        OnStepDone(e.arg);
        break;
      case EventKind::kReady:
        if (!workers_[e.arg]->gone()) {
          workers_[e.arg]->SetReady(now_);
          Membership();
        }
        break;
      case EventKind::kScrape:
        Scrape();
        if (open_ > 0 || now_ < last_arrival_) Schedule(now_ + interval, EventKind::kScrape);
        break;
      case EventKind::kTick:
        Tick();
        if (open_ > 0 || now_ < last_arrival_) Schedule(now_ + 1, EventKind::kTick);
        break;
    }
    if (open_ == 0 && now_ >= last_arrival_) break;
  }
  // Whatever is still open at the cut-off never finished.
  for (std::size_t r = 0; r < requests_.size(); ++r) {
    if (requests_[r].outcome == Outcome::kOpen) Resolve(r, Outcome::kTimedOut);
  }
  // Picks still waiting are answered now, while everything their callbacks touch is alive (they
  // find their requests resolved).
  directory_.Remove(pool_key_);
  state_.reset();
  return Report();
}

RunReport Run::Report() {
  CountReplicas();
  TakeSample();
  RunReport r = std::move(report_);
  r.requests = static_cast<std::int64_t>(trace_.requests.size());
  r.simulated_seconds = now_;
  for (const auto& w : workers_) {
    w->Settle(now_);
    r.joules += w->joules();
    r.idle_joules += w->idle_joules();
    r.grams += w->grams();
    ClassFigures& c = r.classes[scenario_.accelerators[w->spec().accelerator].name];
    c.joules += w->joules();
    c.grams += w->grams();
    const EngineFigures f = w->figures();
    prefix_queries_ += f.prefix_queries_tokens_total;
    prefix_hits_ += f.prefix_hits_tokens_total;
    r.preemptions += f.preemptions_total;
  }
  r.ttft = Summarise(ttft_);
  r.tpot = Summarise(tpot_);
  r.e2e = Summarise(e2e_);
  const auto per = [](double a, std::int64_t b) {
    return b > 0 ? a / static_cast<double>(b) : 0.0;
  };
  r.slo_attainment = per(static_cast<double>(slo_met_), r.requests);
  r.output_tokens_per_second = now_ > 0 ? static_cast<double>(r.output_tokens) / now_ : 0;
  r.joules_per_token = per(r.joules, r.output_tokens);
  r.grams_per_token = per(r.grams, r.output_tokens);
  r.prefix_hit_rate = per(static_cast<double>(prefix_hits_), prefix_queries_);
  r.load_imbalance = per(imbalance_sum_, imbalance_n_);
  r.capacity_imbalance = per(capacity_imbalance_sum_, imbalance_n_);
  return r;
}

}  // namespace

std::vector<PowerProfile> LoadProfiles(const Scenario& scenario) {
  std::vector<PowerProfile> profiles;
  for (const AcceleratorClass& c : scenario.accelerators) {
    if (c.profile.version != scenario.accelerators.front().profile.version) {
      throw ScenarioError("accelerators: the classes mix leaderboard versions (" +
                          scenario.accelerators.front().profile.version + " and " +
                          c.profile.version + "), which differ in engine, data and method");
    }
    profiles.push_back(
        LoadPowerProfile(scenario.mlenergy_csv, scenario.gpus_csv, c.profile, c.idle_watts));
  }
  return profiles;
}

std::vector<api::AcceleratorProfile> MeasuredEnergyProfiles(
    const Scenario& scenario, const std::vector<PowerProfile>& profiles) {
  std::vector<api::AcceleratorProfile> out;
  for (std::size_t i = 0; i < scenario.accelerators.size() && i < profiles.size(); ++i) {
    const PowerProfile& p = profiles[i];
    const double batch = p.max_batch();
    out.push_back({.accelerator = scenario.accelerators[i].name,
                   .energy = {.idle_watts = p.idle_watts(),
                              .max_watts = p.Watts(batch),
                              .max_tokens_per_second = p.TokensPerSecond(batch)}});
  }
  return out;
}

RunReport Simulate(const Scenario& scenario, const Trace& trace,
                   const std::vector<PowerProfile>& profiles, const Policy& policy,
                   const SimulateOptions& options) {
  Run run(scenario, trace, profiles, policy, options);
  return run.Go();
}

}  // namespace eoc::sim
