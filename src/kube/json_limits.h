// How large and how deeply nested the JSON the API server sends may be, named once: the transport
// stops reading past the sizes (TransportOptions' defaults), and every parse of the API server's
// JSON (answers, watch lines, Status bodies) and of an exec plugin's ExecCredential holds to the
// depth (common/bounded_json.h).
#pragma once

#include <cstddef>

namespace eoc::kube {

// A whole answer (a page of a list), and one line of a stream (a watch event).
inline constexpr std::size_t kMaxApiResponseBytes = std::size_t{256} << 20;
inline constexpr std::size_t kMaxApiLineBytes = std::size_t{16} << 20;

// Our objects nest a dozen levels and a CRD's schema a few dozen; the API server itself refuses
// JSON nested deeper than 10,000 (newer releases). 512 is ample for what we read, and keeps the
// recursive copies, comparisons and dumps of what was read within a few hundred KB of stack.
inline constexpr std::size_t kMaxApiJsonDepth = 512;

}  // namespace eoc::kube
