#include "kube/event_recorder.h"

#include <random>

#include "common/json_members.h"
#include "common/object_meta.h"

namespace eoc::kube {
namespace {

using nlohmann::json;

// Cuts `text` to at most `max` bytes without splitting a UTF-8 sequence.
std::string Truncated(std::string_view text, std::size_t max) {
  if (text.size() <= max) return std::string(text);
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0U) == 0x80U) --cut;
  return std::string(text.substr(0, cut));
}

bool Retryable(const Status& error) {
  // No answer at all, or the server (or a proxy) failing: the write itself may be fine.
  return error.IsTransport() || error.code >= 500 || error.IsTooManyRequests();
}

}  // namespace

EventRecorder::EventRecorder(Client& client, EventRecorderOptions options, EventRecorderDeps deps)
    : client_(client),
      options_(std::move(options)),
      clock_(deps.clock != nullptr ? *deps.clock : RealClock()),
      metrics_(deps.metrics),
      fence_(std::move(deps.fence)),
      correlator_(clock_, options_.correlator),
      wake_(clock_),
      random_(deps.random ? std::move(deps.random) : SeededRandom(std::random_device{}())),
      thread_([this] { Run(); }) {}

EventRecorder::~EventRecorder() { Stop(); }

void EventRecorder::Record(const ObjectReference& object, EventType type, std::string_view reason,
                           std::string_view message) {
  if (object.name.empty()) {
    Drop(EventDropReason::kInvalid);
    return;
  }
  Event event;
  event.involved = object;
  event.ns = object.ns.empty() ? "default" : object.ns;
  event.type = type;
  event.reason = std::string(reason);
  event.message = Truncated(message, options_.max_message_bytes);
  event.component = options_.component;
  event.host = options_.host;
  event.first_timestamp = event.last_timestamp = clock_.WallNow();
  EventDropReason refused = EventDropReason::kQueueFull;
  {
    std::unique_lock lock(mu_);
    if (!stopping_ && queue_.size() < options_.queue_capacity) {
      queue_.push_back(std::move(event));
      lock.unlock();
      wake_.Notify();
      return;
    }
    if (stopping_) refused = EventDropReason::kStopped;
  }
  Drop(refused);
}

bool EventRecorder::Flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return idle_.wait_for(lock, timeout, [this] { return queue_.empty() && !busy_; });
}

void EventRecorder::Stop() {
  {
    const std::lock_guard lock(mu_);
    if (!stopping_) drain_deadline_ = clock_.Now() + options_.drain_timeout;
    stopping_ = true;
  }
  wake_.Notify();
  if (thread_.joinable()) thread_.join();
}

EventRecorder::Stats EventRecorder::stats() const {
  const std::lock_guard lock(mu_);
  return stats_;
}

void EventRecorder::Run() {
  Event event;
  while (Next(event)) {
    Process(std::move(event));
    {
      const std::lock_guard lock(mu_);
      busy_ = false;
    }
    idle_.notify_all();
  }
  idle_.notify_all();
}

bool EventRecorder::Next(Event& event) {
  std::unique_lock lock(mu_, std::defer_lock);
  for (;;) {
    // The ticket before looking, so that a Record() or Stop() meanwhile is not missed.
    const Wakeup::Ticket ticket = wake_.TakeTicket();
    lock.lock();
    if (stopping_ || !queue_.empty()) break;
    lock.unlock();
    wake_.SleepUntilNotified(Clock::TimePoint::max(), ticket);
  }
  if (queue_.empty()) return false;
  if (stopping_ && clock_.Now() >= drain_deadline_) {
    const std::size_t left = queue_.size();
    queue_.clear();
    lock.unlock();
    for (std::size_t i = 0; i < left; ++i) Drop(EventDropReason::kStopped);
    return false;
  }
  event = std::move(queue_.front());
  queue_.pop_front();
  busy_ = true;
  return true;
}

void EventRecorder::Process(Event event) {
  const CorrelationResult result = correlator_.Correlate(std::move(event));
  if (result.skip) {
    Drop(EventDropReason::kSpam);
    return;
  }
  WriteWithRetries(result);
}

void EventRecorder::WriteWithRetries(const CorrelationResult& result) {
  for (int attempt = 1;; ++attempt) {
    if (WriteOnce(result) == Outcome::kDone) return;
    if (attempt >= options_.max_tries || Stopping()) break;
    // The first wait is randomised, as client-go, so recorders that lost the API server together
    // do not come back in step.
    const std::chrono::nanoseconds delay = options_.retry_delay;
    if (!WaitUnlessStopped(attempt == 1 ? Spread(delay, random_()) : delay)) break;
  }
  Drop(EventDropReason::kWriteFailed);
}

EventRecorder::Outcome EventRecorder::WriteOnce(const CorrelationResult& result) {
  if (!MayWrite(fence_)) {
    Drop(EventDropReason::kNotLeader);
    return Outcome::kDone;
  }
  const Event& e = result.event;
  if (result.update) {
    auto patched =
        client_.Patch(resources::kEvents, e.ns, e.name, PatchType::kStrategicMerge, result.patch);
    if (patched) {
      Written(result, *patched, true);
      return Outcome::kDone;
    }
    // Gone (the server's event TTL, or deleted): write it anew under the same name.
    if (!patched.error().IsNotFound()) return Failed(patched.error());
  }
  json body = e.ToJson();
  body["metadata"].erase("resourceVersion");
  auto created = client_.Create(resources::kEvents, e.ns, body);
  if (!created) return Failed(created.error());
  Written(result, *created, false);
  return Outcome::kDone;
}

EventRecorder::Outcome EventRecorder::Failed(const Status& error) {
  if (metrics_ != nullptr) metrics_->OnWriteError(error);
  if (Retryable(error)) return Outcome::kRetry;
  // Refused (invalid, forbidden, namespace terminating, already exists): the same request would
  // be refused again.
  Drop(EventDropReason::kInvalid);
  return Outcome::kDone;
}

void EventRecorder::Written(const CorrelationResult& result, const json& answer, bool patched) {
  Event written = result.event;
  written.resource_version.clear();
  // The server's name, version and count; an answer without them (never seen) keeps ours.
  if (const json* count = MemberOrNull(answer, "count");
      count != nullptr && count->is_number_integer()) {
    written.count = count->get<std::int32_t>();
  }
  ObjectMeta meta = ReadObjectMetaLenient(answer);
  if (!meta.name.empty()) written.name = std::move(meta.name);
  written.resource_version = std::move(meta.resource_version);
  correlator_.UpdateState(result.key, written);
  {
    const std::lock_guard lock(mu_);
    ++stats_.written;
    if (patched) ++stats_.aggregated;
  }
  if (metrics_ != nullptr) {
    metrics_->OnEventWritten();
    if (patched) metrics_->OnEventAggregated();
  }
}

void EventRecorder::Drop(EventDropReason reason) {
  {
    const std::lock_guard lock(mu_);
    ++stats_.dropped;
  }
  if (metrics_ != nullptr) metrics_->OnEventDropped(reason);
}

bool EventRecorder::Stopping() const { return stopping_.load(); }

bool EventRecorder::WaitUnlessStopped(std::chrono::nanoseconds d) {
  return !wake_.SleepFor(d, [this] { return stopping_.load(); });
}

}  // namespace eoc::kube
