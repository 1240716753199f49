// ThreadDriverRef: the per-thread control block and the thread's pointer to it.
#include "driver/thread_driver_ref.hpp"

namespace spool::detail {
namespace {

// make_shared puts the counts at the start of the block, and the over-aligned holder after
// them, so the counts have their cache line to themselves (two workers' blocks, made at the
// same moment, would otherwise share one).
struct alignas(64) DriverHolder {
  std::shared_ptr<Driver> driver;
};

constinit thread_local const std::shared_ptr<Driver>* this_thread_ref = nullptr;

}  // namespace

ThreadDriverRef::ThreadDriverRef(const std::shared_ptr<Driver>& driver)
    : ref_(std::make_shared<DriverHolder>(DriverHolder{driver}), driver.get()),
      scope_(this_thread_ref, &ref_) {}

const std::shared_ptr<Driver>& ThreadDriverRef::for_timer(
    const std::shared_ptr<Driver>& driver) noexcept {
  const std::shared_ptr<Driver>* own = this_thread_ref;
  return own != nullptr && own->get() == driver.get() ? *own : driver;
}

}  // namespace spool::detail
