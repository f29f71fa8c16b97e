// The routers users would pick instead of this operator's pick endpoint, as baselines for the
// simulator: each chooses a worker for every request from what such a router knows (the requests
// it has sent and not yet seen finish; for some, the workers' scraped metrics), and never waits
// (the engine queues). Written from each router's public description, with its published defaults;
// no foreign code. The simulator runs them in place of PoolState::Pick, with everything else (the
// fleet, scrapes, the autoscaler) unchanged.
//
//   std::unique_ptr<BaselineRouter> r = MakeBaseline({.kind = BaselineKind::kPowerOfTwo});
//   std::size_t chosen = r->Choose(request, workers, random);   // an index into `workers`
//
// The kinds:
//   random              a uniformly random worker: Kubernetes Service routing through kube-proxy
//                       in iptables mode, which picks an endpoint at random per connection
//                       (kubernetes.io, "Virtual IPs and Service Proxies": iptables proxy mode).
//   round-robin         each worker in turn: Envoy's ROUND_ROBIN and nginx's default upstream
//                       balancing (envoyproxy.io, "Supported load balancers"; nginx.org,
//                       ngx_http_upstream_module).
//   least-outstanding   the worker with the fewest requests in flight from this router, ties to
//                       the first: AWS Application Load Balancer's least outstanding requests
//                       (docs.aws.amazon.com, "Routing algorithms" of target groups).
//   power-of-two        two distinct workers drawn at random, the one with fewer requests in flight
//                       (ties to the first drawn): Envoy's LEAST_REQUEST with its default
//                       choice_count of 2 (envoy v1.35.0, least_request_lb.h: "P2C (power of two
//                       choices)", after Mitzenmacher's thesis).
// Pure: randomness comes in as arguments.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "common/enum_name.h"
#include "sim/trace.h"

namespace eoc::sim {

enum class BaselineKind : std::uint8_t { kRandom, kRoundRobin, kLeastOutstanding, kPowerOfTwo };
inline constexpr std::array<EnumName<BaselineKind>, 4> kBaselineKindNames{{
    {BaselineKind::kRandom, "random"},
    {BaselineKind::kRoundRobin, "round-robin"},
    {BaselineKind::kLeastOutstanding, "least-outstanding"},
    {BaselineKind::kPowerOfTwo, "power-of-two"},
}};
inline std::string_view ToString(BaselineKind kind) {
  return EnumToString(kind, kBaselineKindNames);
}

struct BaselineSpec {
  BaselineKind kind = BaselineKind::kRoundRobin;
};

// What a baseline knows of one worker when it chooses.
struct RouterWorker {
  std::int64_t outstanding = 0;  // requests this router sent it that have not finished
};

class BaselineRouter {
 public:
  virtual ~BaselineRouter() = default;
  // The index in `workers` (not empty) for `request`; `random` is fresh uniform 64 bits.
  virtual std::size_t Choose(const TraceRequest& request, std::span<const RouterWorker> workers,
                             std::uint64_t random) = 0;
};

std::unique_ptr<BaselineRouter> MakeBaseline(const BaselineSpec& spec);

}  // namespace eoc::sim
