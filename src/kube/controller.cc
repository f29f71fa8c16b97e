#include "kube/controller.h"

#include <algorithm>
#include <exception>
#include <utility>

namespace eoc::kube {

const char* ToString(ReconcileOutcome outcome) {
  switch (outcome) {
    case ReconcileOutcome::kSuccess:
      return "success";
    case ReconcileOutcome::kError:
      return "error";
    case ReconcileOutcome::kRequeue:
      return "requeue";
  }
  return "unknown";
}

ReconcileOutcome OutcomeOf(const Result<ReconcileResult>& result) {
  if (!result) return ReconcileOutcome::kError;
  if (result->requeue || result->requeue_after > std::chrono::nanoseconds::zero()) {
    return ReconcileOutcome::kRequeue;
  }
  return ReconcileOutcome::kSuccess;
}

Controller::Controller(std::string name, Reconciler& reconciler, ControllerOptions options,
                       ControllerDeps deps)
    : reconciler_(reconciler),
      workers_count_(std::max(0, options.workers)),
      sync_poll_period_(options.sync_poll_period),
      clock_(deps.clock != nullptr ? *deps.clock : RealClock()),
      metrics_(deps.metrics != nullptr ? deps.metrics : &no_metrics_),
      queue_(std::move(name), clock_, std::move(options.rate_limiter), deps.queue_metrics),
      wakeup_(clock_) {}

Controller::~Controller() { Stop(); }

void Controller::Start(std::vector<SyncedCheck> synced) {
  if (runner_.joinable() || stopping_.load()) return;
  runner_ = std::thread([this, checks = std::move(synced)] { Run(checks); });
}

void Controller::Stop() {
  if (stopping_.exchange(true)) return;
  wakeup_.Notify();
  queue_.ShutDown();
  if (runner_.joinable()) runner_.join();
}

void Controller::Run(const std::vector<SyncedCheck>& synced) {
  if (!WaitForCacheSync(synced)) return;
  started_ = true;
  for (int i = 0; i < workers_count_; ++i) workers_.emplace_back([this] { RunWorker(); });
  for (auto& worker : workers_) worker.join();
}

bool Controller::WaitForCacheSync(const std::vector<SyncedCheck>& synced) {
  const auto stopping = [this] { return stopping_.load(); };
  while (!stopping()) {
    if (std::all_of(synced.begin(), synced.end(), [](const SyncedCheck& c) { return c(); })) {
      return true;
    }
    if (wakeup_.SleepFor(sync_poll_period_, stopping)) return false;
  }
  return false;
}

void Controller::RunWorker() {
  while (auto key = queue_.Get()) {
    ProcessNext(*key);
    queue_.Done(*key);
  }
}

void Controller::ProcessNext(const std::string& key) {
  const auto started = clock_.Now();
  ReconcileOutcome outcome = ReconcileOutcome::kError;
  try {
    const Result<ReconcileResult> result = reconciler_.Reconcile(key);
    outcome = OutcomeOf(result);
    if (!result || (result->requeue && result->requeue_after <= std::chrono::nanoseconds::zero())) {
      queue_.AddRateLimited(key);
    } else if (result->requeue_after > std::chrono::nanoseconds::zero()) {
      queue_.Forget(key);
      queue_.AddAfter(key, result->requeue_after);
    } else {
      queue_.Forget(key);
    }
  } catch (const std::exception& e) {  // a bug, not a state of the world: say so, retry later
    metrics_->OnException(key, e.what());
    queue_.AddRateLimited(key);
  }
  metrics_->OnReconcile(outcome, clock_.Now() - started);
}

}  // namespace eoc::kube
