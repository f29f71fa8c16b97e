#include "routing/ids.h"

#include <xxhash.h>

namespace eoc::routing {

WorkerKey WorkerKeyOf(std::string_view pod) { return XXH64(pod.data(), pod.size(), 0); }

SessionHash SessionHashOf(std::string_view session_id) {
  return XXH64(session_id.data(), session_id.size(), 0);
}

}  // namespace eoc::routing
