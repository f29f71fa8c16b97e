// A write fence: asked immediately before each write that only the leader may make (a pool's
// status, Events), so that a replica whose Lease has lapsed writes nothing, even while its
// elector's thread is still stuck in a renewal and has not yet called on_stopped_leading.
//
//   eoc::kube::WriteFence fence = [&elector] { return elector.IsLeader(); };  // {}: no election
//   if (!eoc::kube::MayWrite(fence)) return;         // not the leader at this moment
//   client.Update(...);
#pragma once

#include <functional>

namespace eoc::kube {

// True while this process may write; an empty fence always may (no leader election).
using WriteFence = std::function<bool()>;

inline bool MayWrite(const WriteFence& fence) { return !fence || fence(); }

}  // namespace eoc::kube
