// One simulated worker pod: its engine, what it draws and emits, the pod and node the controller's
// membership code reads, and the /metrics page its scrapes read. Internal to the simulator
// (simulator.cc drives it).
//
//   SimWorker w(spec);                        // a pod of a group, starting or ready
//   w.Admit(request, now);                    // may start a step: then w.stepping()
//   StepResult done = w.FinishStep(now);      // at the step's end; the next may start
//   std::string page = w.Page(now);           // vLLM's page with DCGM's power series
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "kube/node_view.h"
#include "kube/pod_view.h"
#include "sim/engine.h"
#include "sim/scenario.h"

namespace eoc::sim {

// The namespace of every simulated pod, and the label that names a pod's worker group.
inline constexpr const char* kSimNamespace = "sim";
inline constexpr const char* kGroupLabel = "eoc.dev/sim-group";

struct SimWorkerSpec {
  std::string name;  // the pod's name
  std::size_t group = 0;
  std::size_t accelerator = 0;  // index of the class
  const AcceleratorClass* accelerator_class = nullptr;
  EngineParams engine;  // the class's, with the trace's prefix block size
  const Zone* zone = nullptr;
  const PowerProfile* profile = nullptr;
  std::string pod_ip;
  std::string node;  // the node's name
  double created_seconds = 0;
  bool ready = false;  // the initial fleet starts ready; a scaled-up pod after its cold start
  std::string model;   // the page's model_name label
};

class SimWorker {
 public:
  explicit SimWorker(SimWorkerSpec spec);

  const SimWorkerSpec& spec() const { return spec_; }
  const std::string& pod_key() const { return pod_key_; }  // "namespace/name"
  // The pod as the informer would show it (shared: membership reads it).
  const std::shared_ptr<const kube::PodView>& pod() const { return pod_; }

  bool ready() const { return ready_; }
  void SetReady(double now);
  bool gone() const { return gone_; }
  // Removes the pod: its draw stops at `now`.
  void Remove(double now);
  bool draining = false;  // published as draining by a scale-in
  double drain_since = 0;

  // Queues a request on the engine and starts a step if none runs.
  void Admit(EngineRequest request, double now);
  bool stepping() const { return step_.has_value(); }
  double step_end() const { return step_end_; }
  // The step that ran to `now` (its end): its results; the next one starts if there is work.
  StepResult FinishStep(double now);
  // Requests the engine refused (too large for its cache), since the last call; they are no
  // longer in flight.
  std::vector<std::uint64_t> TakeRefused();
  std::int64_t in_flight() const { return in_flight_; }
  // What it can hold, for the capacity-weighted imbalance: its KV cache, in tokens (> 0: the
  // engine's parameters are checked).
  double capacity() const { return static_cast<double>(spec_.engine.kv_capacity_tokens); }

  // The energy and carbon drawn up to `now` (counted as far as `now` first).
  void Settle(double now);
  double joules() const { return joules_; }
  double idle_joules() const { return idle_joules_; }
  double grams() const { return grams_; }
  double watts() const { return watts_; }
  EngineFigures figures() const { return engine_.Figures(); }

  // The worker's /metrics page at `now`: vLLM's series with DCGM's power and energy for its pod.
  std::string Page(double now);

 private:
  void StartStep(double now);

  SimWorkerSpec spec_;
  std::string pod_key_;
  std::shared_ptr<const kube::PodView> pod_;
  Engine engine_;
  bool ready_ = false;
  bool gone_ = false;
  std::optional<StepResult> step_;  // the step running, its effects due at step_end_
  double step_end_ = 0;
  std::int64_t in_flight_ = 0;  // admitted, not finished or refused
  double watts_ = 0;            // the draw since settled_
  double settled_ = 0;
  double joules_ = 0;
  double idle_joules_ = 0;
  double grams_ = 0;
};

// The node a group's pods run on: its GPU product and its zone under `zone_label`.
kube::NodeView NodeOf(const std::string& name, const AcceleratorClass& accelerator,
                      const Zone& zone, const std::string& zone_label);

}  // namespace eoc::sim
