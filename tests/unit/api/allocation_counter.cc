#include "allocation_counter.h"

#include <cstdlib>
#include <new>

namespace {
thread_local bool counting = false;
thread_local int allocations = 0;
}  // namespace

void* operator new(std::size_t size) {
  if (counting) ++allocations;
  void* p = std::malloc(size == 0 ? 1 : size);  // NOLINT(cppcoreguidelines-no-malloc)
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void operator delete(void* p) noexcept { std::free(p); }  // NOLINT(cppcoreguidelines-no-malloc)

void operator delete(void* p, std::size_t /*size*/) noexcept {
  std::free(p);  // NOLINT(cppcoreguidelines-no-malloc)
}

// The nothrow forms too (std::stable_sort's temporary buffer uses them): left to the runtime, a
// buffer from its operator new(nothrow) is freed through the delete above, and AddressSanitizer,
// whose runtime supplies that new, reports the pair as alloc-dealloc-mismatch.
void* operator new(std::size_t size, const std::nothrow_t& /*tag*/) noexcept {
  if (counting) ++allocations;
  return std::malloc(size == 0 ? 1 : size);  // NOLINT(cppcoreguidelines-no-malloc)
}

void operator delete(void* p, const std::nothrow_t& /*tag*/) noexcept {
  std::free(p);  // NOLINT(cppcoreguidelines-no-malloc)
}

namespace eoc::api::testing {

void AllocationCounter::Start() {
  allocations = 0;
  counting = true;
}

int AllocationCounter::Stop() {
  counting = false;
  return allocations;
}

}  // namespace eoc::api::testing
