// Bearer tokens and client certificates for each request, kept fresh: a token file is re-read
// (bound service-account tokens rotate), and an exec credential plugin is run again when its
// credential expires or the API server answers 401.
//
//   auto creds = eoc::kube::MakeCredentialSource(cfg, clock);
//   eoc::kube::Credentials c = creds->Get();        // throws CredentialError
//   if (response.status == 401) creds->Invalidate(); // the next Get() fetches anew
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/clock.h"
#include "kube/config.h"
#include "kube/credential_error.h"

namespace eoc::kube {

struct Credentials {
  std::string token;            // empty: no Authorization header
  std::string client_cert_pem;  // empty: no client certificate
  std::string client_key_pem;
  bool operator==(const Credentials&) const = default;
};

class CredentialSource {
 public:
  virtual ~CredentialSource() = default;
  // The credentials to use now. Thread-safe. Throws CredentialError when none can be had.
  virtual Credentials Get() = 0;
  // The API server rejected the last credentials (401): fetch anew on the next Get().
  virtual void Invalidate() = 0;
};

// Chooses by the config: exec plugin, else token file, else static token and/or client cert.
std::unique_ptr<CredentialSource> MakeCredentialSource(const RestConfig& config,
                                                       const Clock& clock);

// How often a token file is read again (client-go re-reads at most once a minute).
inline constexpr std::chrono::seconds kTokenFileRereadPeriod{60};

}  // namespace eoc::kube
