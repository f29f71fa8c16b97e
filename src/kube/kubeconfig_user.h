// Internal to src/kube's kubeconfig reading: a users[].user entry (token, tokenFile, client
// certificate and key, exec credential plugin) applied to a RestConfig.
#pragma once

#include "kube/config.h"
#include "kube/kubeconfig_field.h"

namespace eoc::kube::kubeconfig {

// Reads `user` into `config`; throws ConfigError naming the field. auth-provider and basic auth
// are refused (kubectl has them; silently ignoring them would only produce puzzling 401s).
void ApplyUser(const Field& user, RestConfig* config);

}  // namespace eoc::kube::kubeconfig
