// The error of every way of getting credentials (token files, exec plugins): a leaf, so that
// exec_plugin.h and credentials.h both use it without pointing at each other.
#pragma once

#include <stdexcept>

namespace eoc::kube {

class CredentialError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace eoc::kube
