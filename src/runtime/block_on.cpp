#include "spool/block_on.hpp"

#include "context/current.hpp"
#include "context/enter.hpp"
#include "runtime/root_waker.hpp"
#include "runtime/shared.hpp"
#include "sync/thread.hpp"

namespace spool::detail {

BlockOnExecutor::BlockOnExecutor()
    : root_(std::make_shared<RootWaker>()), waker_(Waker::from(root_)), cx_(waker_, &slot_) {
  enter_executor("spool::block_on");
}

BlockOnExecutor::~BlockOnExecutor() { exit_executor(); }

void BlockOnExecutor::park() { root_->wait(slot_.hook()); }

// --- Runtime::block_on ---

namespace {

// Tells a current-thread runtime's driver that a Runtime::block_on runs (with the core or
// not): a paused clock then moves only through the runtime's own thread.
class BlockOnPresence {
 public:
  explicit BlockOnPresence(Driver* driver) noexcept : driver_(driver) {
    if (driver_) driver_->block_on_began();
  }
  ~BlockOnPresence() {
    if (driver_) driver_->block_on_ended();
  }
  BlockOnPresence(const BlockOnPresence&) = delete;
  BlockOnPresence& operator=(const BlockOnPresence&) = delete;

 private:
  Driver* driver_;  // null on a multi-thread runtime (its clock cannot be paused)
};

}  // namespace

struct RuntimeBlockOn::State {
  explicit State(std::shared_ptr<RuntimeShared> runtime)
      : rt(std::move(runtime)),
        enter("spool::Runtime::block_on"),
        in_runtime(rt.get()),
        current_thread(rt->current_thread()),
        presence(current_thread ? rt->driver().get() : nullptr),
        root(std::make_shared<RootWaker>(current_thread ? current_thread->core_parker() : nullptr)),
        waker(Waker::from(root)),
        cx(waker, &slot),
        driving(current_thread && current_thread->try_take_core()) {  // last: nothing throws after
    // The runtime's driver, so that the root's timers are armed in it (and a future that
    // brings another reactor falls back, as on a worker).
    slot.install(rt->driver());
    set_up_sanitizer_signal_state();  // this thread blocks here: a signal may come to it
  }
  ~State() {
    if (driving) current_thread->release_core();
  }

  std::shared_ptr<RuntimeShared> rt;
  EnterGuard enter;
  CurrentRuntimeScope in_runtime;
  // The current-thread scheduler this thread may drive, or null (multi-thread: the root
  // just waits, the workers run the tasks).
  CurrentThread* current_thread;
  BlockOnPresence presence;  // ends after the core is given back (~State's body)
  std::shared_ptr<RootWaker> root;
  Waker waker;
  ReactorSlot slot;
  Context cx;
  bool driving;  // this thread holds the core (taken mid-way when the thread with it leaves; given
                 // up when the runtime shuts down)
};

RuntimeBlockOn::RuntimeBlockOn(std::shared_ptr<RuntimeShared> rt)
    : state_(std::make_unique<State>(std::move(rt))) {}
RuntimeBlockOn::~RuntimeBlockOn() = default;

Context& RuntimeBlockOn::context() noexcept { return state_->cx; }

void RuntimeBlockOn::park() {
  State& s = *state_;
  if (s.current_thread == nullptr) {
    // The workers drive the runtime's driver (the slot's reactor): wait on the thread's own.
    s.root->wait(nullptr);
    return;
  }
  if (!s.driving) {
    if (!s.current_thread->wait_for_root(s.root->woken, s.root->parker())) return;
    s.driving = true;  // the thread with the core left: this one took it
  }
  if (!s.current_thread->run_until(s.root->woken, s.slot)) {
    // Shut down: the shutdown takes the core; this thread waits for its root alone.
    s.driving = false;
    s.current_thread->release_core();
  }
}

}  // namespace spool::detail
