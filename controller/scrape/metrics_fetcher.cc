#include "controller/scrape/metrics_fetcher.h"

#include <condition_variable>
#include <mutex>

#include "telemetry/logging.h"

namespace eoc::controller {

void Deliver(const MetricsFetcher::Callback& done, FetchResult result) {
  try {
    done(std::move(result));
  } catch (const std::exception& e) {
    static const telemetry::Logger log("scrape-fetch");
    log.Error("a scrape callback threw", {{"error", e.what()}});
  }
}

void FetchAll(MetricsFetcher& fetcher, std::span<const FetchRequest> requests,
              const std::function<void(std::size_t, FetchResult)>& on_each) {
  std::mutex mu;
  std::condition_variable all_done;
  std::size_t remaining = requests.size();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    fetcher.Fetch(requests[i], [&, i](FetchResult result) {
      const std::lock_guard lock(mu);
      on_each(i, std::move(result));
      if (--remaining == 0) all_done.notify_all();
    });
  }
  std::unique_lock lock(mu);
  all_done.wait(lock, [&] { return remaining == 0; });
}

}  // namespace eoc::controller
