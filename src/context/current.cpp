#include "context/current.hpp"

namespace spool::detail {

namespace {
// Thread-locals: no synchronisation.
thread_local RuntimeShared* current = nullptr;
thread_local RuntimeShared* own_runtime = nullptr;
}  // namespace

RuntimeShared* current_runtime_ptr() noexcept { return current; }
RuntimeShared* runtime_of_thread() noexcept { return own_runtime; }

CurrentRuntimeScope::CurrentRuntimeScope(RuntimeShared* rt) noexcept : saved_(current) {
  current = rt;
}
CurrentRuntimeScope::~CurrentRuntimeScope() { current = saved_; }

RuntimeThreadScope::RuntimeThreadScope(RuntimeShared* rt) noexcept
    : current_(rt), saved_(own_runtime) {
  own_runtime = rt;
}
RuntimeThreadScope::~RuntimeThreadScope() { own_runtime = saved_; }

}  // namespace spool::detail
