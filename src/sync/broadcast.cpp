// spool::broadcast: the untyped part of the channel (BroadcastCore: closing, waiting
// receivers, counts) and RecvError's messages. docs/sync.md.
#include <mutex>
#include <string>

#include "spool/detail/broadcast_chan.hpp"
#include "spool/sync/broadcast_result.hpp"

namespace spool {

namespace broadcast {

namespace {
std::string recv_error_message(RecvStatus status, std::uint64_t missed) {
  switch (status) {
    case RecvStatus::kLagged:
      return "spool::broadcast: the receiver lagged behind and missed " + std::to_string(missed) +
             " messages (overwritten before it read them); its next receive gives the oldest "
             "message still held. Receive faster, or give the channel a larger capacity";
    case RecvStatus::kClosed:
      return "spool::broadcast: the channel is closed: every sender was dropped and this "
             "receiver has received every message left";
    case RecvStatus::kEmpty:
      return "spool::broadcast: try_recv found no message (more may come); co_await recv() to "
             "wait for one";
    case RecvStatus::kValue:
      break;
  }
  return "spool::broadcast: RecvError made for a receive that gave a message";
}
}  // namespace

RecvError::RecvError(RecvStatus status, std::uint64_t missed)
    : std::runtime_error(recv_error_message(status, missed)), status_(status), missed_(missed) {}

}  // namespace broadcast

namespace detail {

void BroadcastCore::drop_sender() {
  // AcqRel: see senders_; only the drop that takes the count to 0 goes on.
  if (senders_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  WakeList wakes;  // declared before the lock: woken after the unlock
  Lock lock(lock_);
  closed_ = true;
  wake_locked(lock, wakes);
}

std::uint64_t BroadcastCore::unread(std::uint64_t next) {
  std::lock_guard guard(lock_);
  return tail_ - next;
}

void BroadcastCore::leave(BroadcastWaiter& node) noexcept {
  Waker old;  // declared before the lock: dropped after the unlock
  std::lock_guard guard(lock_);
  leave_locked(node, old);
}

void BroadcastCore::wait_locked(BroadcastWaiter& node, const Waker& waker, Waker& replaced) {
  if (node.linked()) {
    WaiterList::refresh_locked(node, waker, replaced);
    return;
  }
  node.pos = tail_;
  waiters_.push_back(node, waker);
}

void BroadcastCore::leave_locked(BroadcastWaiter& node, Waker& old) noexcept {
  if (!node.linked()) return;
  waiters_.remove(node);
  old = node.take_waker();
}

void BroadcastCore::wake_locked(Lock& lock, WakeList& wakes) {
  // Nodes are linked in the order of their positions (a node waits for the tail of its
  // time), so those with nothing new to read are at the back: the ones linked while a full
  // batch was being woken without the lock.
  while (!waiters_.empty()) {
    auto& node = static_cast<BroadcastWaiter&>(*waiters_.front());
    if (!closed_ && node.pos >= tail_) break;
    waiters_.complete(node, wakes);
    wakes.flush_if_full(lock);
  }
}

}  // namespace detail

}  // namespace spool
