// A core/v1 Event and the object it is about, as the recorder writes them (client-go's
// tools/record shapes): the JSON body, and the name "<object>.<16 hex digits of ns>".
//
//   eoc::kube::Event e{.name = eoc::kube::EventName("chat", now_ns), .ns = "prod",
//                      .involved = pool, .type = eoc::kube::EventType::kWarning,
//                      .reason = "ScaleFailed", .message = "409 Conflict"};
//   nlohmann::json body = e.ToJson();  // apiVersion v1, kind Event
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace eoc::kube {

// The object an Event is about (core/v1 ObjectReference).
struct ObjectReference {
  std::string kind;
  std::string ns;  // empty for cluster-scoped objects: their Events go to "default"
  std::string name;
  std::string uid;
  std::string api_version;
  std::string resource_version;
};

enum class EventType { kNormal, kWarning };

const char* ToString(EventType type);  // "Normal", "Warning"

// A core/v1 Event as the recorder writes it.
struct Event {
  std::string name;  // metadata.name
  std::string ns;    // metadata.namespace
  std::string resource_version;
  ObjectReference involved;
  EventType type = EventType::kNormal;
  std::string reason;
  std::string message;
  std::string component;  // source.component and reportingComponent
  std::string host;       // source.host and reportingInstance; may be empty
  std::int32_t count = 1;
  std::chrono::system_clock::time_point first_timestamp;
  std::chrono::system_clock::time_point last_timestamp;

  nlohmann::json ToJson() const;
};

// "<object name>.<16 hex digits of the time in ns>", as client-go names Events; `unix_nanos` must
// be unique per process (the correlator makes it so).
std::string EventName(const std::string& object_name, std::int64_t unix_nanos);

}  // namespace eoc::kube
