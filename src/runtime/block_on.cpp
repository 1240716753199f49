#include "spool/block_on.hpp"

#include "driver/thread_parker.hpp"
#include "runtime/enter.hpp"

namespace spool::detail {

// What block_on's Waker points at: waking unparks the block_on thread.
class BlockOnParker {
 public:
  void wake() noexcept { parker.unpark(); }
  ThreadParker parker;
};

BlockOnExecutor::BlockOnExecutor()
    : parker_(std::make_shared<BlockOnParker>()),
      waker_(Waker::from(parker_)),
      cx_(waker_, &slot_) {
  enter_executor("spool::block_on");
}

BlockOnExecutor::~BlockOnExecutor() { exit_executor(); }

void BlockOnExecutor::park() { parker_->parker.park(slot_.hook()); }

}  // namespace spool::detail
