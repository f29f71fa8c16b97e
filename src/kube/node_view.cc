#include "kube/node_view.h"

#include "kube/types.h"

namespace eoc::kube {

NodeView ToNodeView(const nlohmann::json& node) {
  ObjectMeta meta = ParseObjectMeta(node);
  NodeView view;
  view.name = std::move(meta.name);
  view.labels.assign(meta.labels.begin(), meta.labels.end());  // a std::map: already sorted
  return view;
}

}  // namespace eoc::kube
