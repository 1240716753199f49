#include "spool/block_on.hpp"

#include "runtime/enter.hpp"
#include "runtime/root_waker.hpp"
#include "runtime/shared.hpp"

namespace spool::detail {

BlockOnExecutor::BlockOnExecutor()
    : root_(std::make_shared<RootWaker>()), waker_(Waker::from(root_)), cx_(waker_, &slot_) {
  enter_executor("spool::block_on");
}

BlockOnExecutor::~BlockOnExecutor() { exit_executor(); }

void BlockOnExecutor::park() {
  while (!root_->woken.exchange(false, std::memory_order_acquire))
    root_->parker().park(slot_.hook());
}

// --- Runtime::block_on ---

struct RuntimeBlockOn::State {
  explicit State(std::shared_ptr<RuntimeShared> runtime)
      : rt(std::move(runtime)),
        enter("spool::Runtime::block_on"),
        in_runtime(rt.get()),
        driving(rt->can_drive()),
        root(std::make_shared<RootWaker>(rt->driver_parker())),
        waker(Waker::from(root)),
        cx(waker, &slot) {}
  ~State() {
    if (driving) rt->release_driver();
  }

  std::shared_ptr<RuntimeShared> rt;
  EnterGuard enter;
  CurrentRuntimeGuard in_runtime;
  bool driving;  // this thread runs the (current-thread) runtime's tasks meanwhile (it may
                 // start to mid-way, when the thread that drove them leaves)
  std::shared_ptr<RootWaker> root;
  Waker waker;
  ReactorSlot slot;
  Context cx;
};

RuntimeBlockOn::RuntimeBlockOn(std::shared_ptr<RuntimeShared> rt)
    : state_(std::make_unique<State>(std::move(rt))) {}
RuntimeBlockOn::~RuntimeBlockOn() = default;

Context& RuntimeBlockOn::context() noexcept { return state_->cx; }

void RuntimeBlockOn::park() {
  State& s = *state_;
  if (!s.driving) {
    if (!s.rt->wait_for_root(s.root->woken, s.root->parker(), s.slot)) return;
    s.driving = true;  // the driver left: this thread took over
  }
  s.rt->drive_until(s.root->woken, s.slot);
}

}  // namespace spool::detail
