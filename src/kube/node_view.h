// The compact view of a Node that informers keep: its name and labels (zone, accelerator
// product), nothing of its status, which a kubelet rewrites every few seconds.
//
//   Informer<NodeView> nodes(client, {.resource = resources::kNodes}, ToNodeView, clock);
//   if (const std::string* zone = Lookup(node->labels, "topology.kubernetes.io/region")) ...
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "kube/pod_view.h"

namespace eoc::kube {

struct NodeView {
  std::string name;
  StringPairs labels;  // sorted by key
};

// Throws MappingError naming the field when the document has no metadata.name.
NodeView ToNodeView(const nlohmann::json& node);

}  // namespace eoc::kube
