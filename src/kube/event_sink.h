// Where Events go: the one call a reconciler makes to report what happened to an object, apart
// from how it is written (kube::EventRecorder: correlation, spam filter, a writer thread), so that
// a reconciler's unit tests can record into a fake.
//
//   void Report(eoc::kube::EventSink& events, const eoc::kube::ObjectReference& pool) {
//     events.Record(pool, eoc::kube::EventType::kWarning, "SpecInvalid", "spec.selector: empty");
//   }
#pragma once

#include <string_view>

#include "kube/event.h"

namespace eoc::kube {

class EventSink {
 public:
  virtual ~EventSink() = default;
  // Queues an Event about `object`; never waits on the network. Thread-safe.
  virtual void Record(const ObjectReference& object, EventType type, std::string_view reason,
                      std::string_view message) = 0;
};

}  // namespace eoc::kube
