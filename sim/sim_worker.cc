#include "sim/sim_worker.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "controller/workers.h"
#include "sim/metrics_pages.h"

namespace eoc::sim {
namespace {

constexpr double kJoulesPerKwh = 3.6e6;
constexpr double kHour = 3600;

std::chrono::system_clock::time_point Wall(double seconds) {
  return std::chrono::system_clock::time_point{} +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             std::chrono::duration<double>(seconds));
}

std::shared_ptr<const kube::PodView> MakePod(const SimWorkerSpec& spec, const std::string& group,
                                             bool ready, double ready_since) {
  auto pod = std::make_shared<kube::PodView>();
  pod->ns = kSimNamespace;
  pod->name = spec.name;
  pod->uid = "sim-" + spec.name;
  pod->node_name = spec.node;
  pod->pod_ip = spec.pod_ip;
  pod->labels = {{"app", "sim"}, {kGroupLabel, group}};  // sorted by key
  std::sort(pod->labels.begin(), pod->labels.end());
  pod->extended_requests = {{"nvidia.com/gpu", spec.accelerator_class->profile.num_gpus}};
  pod->created = Wall(spec.created_seconds);
  pod->phase = ready ? kube::PodPhase::kRunning : kube::PodPhase::kPending;
  pod->ready = ready;
  if (ready) pod->ready_since = Wall(ready_since);
  return pod;
}

}  // namespace

SimWorker::SimWorker(SimWorkerSpec spec)
    : spec_(std::move(spec)),
      pod_key_(std::string(kSimNamespace) + "/" + spec_.name),
      engine_(spec_.engine, *spec_.profile),
      ready_(spec_.ready),
      watts_(spec_.profile->idle_watts()),
      settled_(spec_.created_seconds) {
  pod_ = MakePod(spec_, std::to_string(spec_.group), ready_, spec_.created_seconds);
}

void SimWorker::SetReady(double now) {
  ready_ = true;
  pod_ = MakePod(spec_, std::to_string(spec_.group), true, now);
}

void SimWorker::Remove(double now) {
  Settle(now);
  gone_ = true;
  watts_ = 0;
  step_.reset();
}

void SimWorker::Admit(EngineRequest request, double now) {
  engine_.Admit(std::move(request));
  ++in_flight_;
  if (!step_) StartStep(now);
}

void SimWorker::StartStep(double now) {
  Settle(now);
  StepResult step = engine_.Step();
  if (step.seconds <= 0) {  // nothing to run (or only refusals)
    watts_ = spec_.profile->idle_watts();
    return;
  }
  watts_ = step.joules / step.seconds;
  step_end_ = now + step.seconds;
  step_ = std::move(step);
}

StepResult SimWorker::FinishStep(double now) {
  Settle(now);
  StepResult done = std::move(*step_);
  step_.reset();
  in_flight_ -= static_cast<std::int64_t>(done.finished.size());
  watts_ = spec_.profile->idle_watts();
  if (engine_.HasWork()) StartStep(now);
  return done;
}

std::vector<std::uint64_t> SimWorker::TakeRefused() {
  std::vector<std::uint64_t> refused = engine_.TakeRefused();
  in_flight_ -= static_cast<std::int64_t>(refused.size());
  return refused;
}

void SimWorker::Settle(double now) {
  if (gone_ || now <= settled_) return;
  const double joules = watts_ * (now - settled_);
  joules_ += joules;
  if (!step_) idle_joules_ += joules;
  // Each joule at the intensity of its hour (a zone with one value has the same every hour).
  double t = settled_;
  while (t < now) {
    const double hour_end = (std::floor(t / kHour) + 1) * kHour;
    const double end = spec_.zone->grams_per_kwh.size() > 1 ? std::min(now, hour_end) : now;
    grams_ += watts_ * (end - t) / kJoulesPerKwh * spec_.zone->GramsPerKwhAt(t);
    t = end;
  }
  settled_ = now;
}

std::string SimWorker::Page(double now) {
  Settle(now);
  const EngineFigures f = engine_.Figures();
  const PageFigures figures{.running = f.running,
                            .waiting = f.waiting,
                            .kv_cache_usage = f.kv_cache_usage,
                            .num_gpu_blocks = f.kv_blocks_total,
                            .block_size = f.kv_block_tokens,
                            .max_running = spec_.engine.max_num_seqs,
                            .prompt_tokens_total = f.prompt_tokens_total,
                            .generation_tokens_total = f.generation_tokens_total,
                            .watts = watts_,
                            .energy_millijoules_total = std::llround(joules_ * 1000)};
  return RenderMetrics(
      api::Engine::kVllm, figures,
      {.model = spec_.model, .pod_name = spec_.name, .pod_namespace = kSimNamespace},
      /*dcgm=*/true);
}

kube::NodeView NodeOf(const std::string& name, const AcceleratorClass& accelerator,
                      const Zone& zone, const std::string& zone_label) {
  kube::NodeView node{.name = name,
                      .labels = {{std::string(controller::kGpuProductLabel), accelerator.name},
                                 {zone_label, zone.name}}};
  std::sort(node.labels.begin(), node.labels.end());
  return node;
}

}  // namespace eoc::sim
