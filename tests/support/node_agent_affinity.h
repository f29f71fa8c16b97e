// Internal to the node agent: a pod's required node affinity
// (spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution), read and matched
// against a node as the scheduler does. The DaemonSet controller pins each of its pods to a node
// this way (one term, matchFields metadata.name In [node], nodeName left empty for the scheduler).
// Pure.
//
//   RequiredNodeAffinity affinity = ParseRequiredNodeAffinity(pod["spec"]);
//   if (!affinity.problem.empty()) ...  // cannot be evaluated: the pod is bound nowhere
//   bool fits = affinity.Matches("gpu-a", {{"kubernetes.io/hostname", "gpu-a"}});
//
// Matching, as the scheduler's: the terms are ORed, the requirements of one term ANDed; a term
// with no requirement matches no node. matchExpressions on node labels: In, NotIn (also true when
// the label is absent), Exists, DoesNotExist, Gt and Lt (the label and the one value read as
// integers). matchFields: metadata.name with In or NotIn. preferredDuringScheduling... is a
// preference and is not read.
//
// Anything else (another operator, another field, a value list of the wrong length for the
// operator, or a field of an odd shape) makes `problem` non-empty: a requirement the agent cannot
// evaluate is never read as satisfied, nor as absent.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace eoc::testing::internal {

struct NodeSelectorRequirement {
  std::string key;
  std::string op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
};

struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;  // on node labels
  std::vector<NodeSelectorRequirement> match_fields;       // on metadata.name
};

struct RequiredNodeAffinity {
  bool present = false;  // the pod has a required node affinity
  std::vector<NodeSelectorTerm> terms;
  std::string problem;  // non-empty: what cannot be evaluated (then Matches is false)

  // Whether a node of that name and labels satisfies it; true when absent.
  bool Matches(const std::string& node_name,
               const std::map<std::string, std::string>& node_labels) const;
};

// Reads spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution of a pod spec
// (`spec` may be null or not an object: no affinity).
RequiredNodeAffinity ParseRequiredNodeAffinity(const nlohmann::json* spec);

}  // namespace eoc::testing::internal
