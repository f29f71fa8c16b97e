#include "routing/published.h"

namespace eoc::routing::internal {

std::uint64_t NextPublishedId() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace eoc::routing::internal
