#include "context/current.hpp"

namespace spool::detail {

namespace {
// Thread-locals: no synchronisation.
thread_local RuntimeShared* current = nullptr;
thread_local RuntimeShared* own_runtime = nullptr;
}  // namespace

RuntimeShared* current_runtime_ptr() noexcept { return current; }
RuntimeShared* runtime_of_thread() noexcept { return own_runtime; }

CurrentRuntimeScope::CurrentRuntimeScope(RuntimeShared* rt) noexcept
    : ThreadLocalScope(current, rt) {}

RuntimeThreadScope::RuntimeThreadScope(RuntimeShared* rt) noexcept
    : ThreadLocalScope(own_runtime, rt), current_(rt) {}

}  // namespace spool::detail
