// Model of the oneshot channel's state word (include/spool/sync/oneshot.hpp), on the real
// Sender, Receiver and Closed (Sender::closed()).
//
// The value is a Box behind a std::unique_ptr: its field is a Relacy var, written by the
// sender before send and read by whoever ends up with the box, so a missing happens-before
// edge is reported as a data race, and a box never destroyed as a leak.
//
// Invariants:
//  - OneshotSendModel: the sender sends (then drops its Sender) while the receiver polls and
//    a third thread polls the Sender's closed() future. Both wakers registered before their
//    re-check are woken (no lost wake-up: park_until_woken): the receiver gets the value,
//    and closed() completes because a value was sent. The receiver keeps its Receiver, so
//    no close can stand in for the send's wake-up of closed();
//  - OneshotCloseModel: the sender sends while the receiver polls once (pending or not), then
//    closes and takes what is there (try_recv), and a third thread polls closed(). The value
//    is received if and only if send returned true (never both received and refused, never
//    lost), and closed() completes (woken by the close or by the send).
#include <memory>
#include <optional>

#include "model/sync_model.hpp"
#include "spool/sync/oneshot.hpp"

namespace {

using spool::model::Pool;
using spool::model::Task;

struct Box {
  rl::var<int> v;
};
using Value = std::unique_ptr<Box>;

// What both suites share: the channel, the closed() future, and the two waiting tasks.
struct Oneshot {
  Pool pool;
  Task rx_task;
  Task closed_task;
  std::optional<spool::oneshot::Sender<Value>> tx;
  std::optional<spool::oneshot::Receiver<Value>> rx;
  std::optional<spool::oneshot::Closed<Value>> closed;
  // Threads done that can wake the receiver (the sender) and closed() (the sender, and in
  // OneshotCloseModel the receiver); each adds 1 (release) after its last step.
  spool::detail::Atomic<int> rx_done{0};
  spool::detail::Atomic<int> closed_done{0};
  bool sent = false;      // the sender's: what send returned
  bool received = false;  // the receiver's: it got the value

  void set_up() {
    auto [t, r] = spool::oneshot::channel<Value>();
    tx.emplace(std::move(t));
    rx.emplace(std::move(r));
    closed.emplace(tx->closed());
  }
  // The sender thread: sends a fresh box, then drops the Sender.
  void send() {
    Value box = std::make_unique<Box>();
    box->v($) = 42;
    sent = tx->send(std::move(box));
    tx.reset();
    // Release: see rx_done and closed_done.
    rx_done.fetch_add(1, std::memory_order_release);
    closed_done.fetch_add(1, std::memory_order_release);
  }
  void take(const Value& box) {
    RL_ASSERT(box && box->v($) == 42);
    received = true;
  }
  // A poll of the receiver with its task's waker; true when it took the value.
  bool poll_receiver(int& seen) {
    spool::Waker w = spool::Waker::from_raw(pool.make(rx_task));
    spool::Context cx(w);
    seen = rx_task.wakes.load(std::memory_order_relaxed);  // before the poll
    spool::Poll<Value> p = rx->poll(cx);
    if (p.is_pending()) return false;
    take(p.value());
    return true;
  }
  // The closed() thread: polls until ready, parking on every pending poll.
  void wait_closed(int wakers) {
    spool::Waker w = spool::Waker::from_raw(pool.make(closed_task));
    spool::Context cx(w);
    for (;;) {
      const int seen = closed_task.wakes.load(std::memory_order_relaxed);  // before the poll
      if (closed->poll(cx).is_ready()) return;
      spool::model::park_until_woken(closed_task, seen, closed_done, wakers);
    }
  }
  void tear_down() {
    closed.reset();
    rx.reset();
    tx.reset();
    RL_ASSERT(rx_task.refs.load(std::memory_order_relaxed) == 0);
    RL_ASSERT(closed_task.refs.load(std::memory_order_relaxed) == 0);
  }
};

// Both suites: thread 0 sends, thread 1 receives (OneshotSendModel: until it has the
// value; OneshotCloseModel: one poll, then close and try_recv), thread 2 waits on closed().
template <bool kClose>
struct OneshotModel : rl::test_suite<OneshotModel<kClose>, 3> {
  Oneshot o;

  void before() { o.set_up(); }
  void thread(unsigned index) {
    if (index == 0) {
      o.send();
    } else if (index == 2) {
      o.wait_closed(kClose ? 2 : 1);
    } else if (!kClose) {
      int seen = 0;
      while (!o.poll_receiver(seen)) spool::model::park_until_woken(o.rx_task, seen, o.rx_done, 1);
    } else {
      int seen = 0;
      if (!o.poll_receiver(seen)) {
        o.rx->close();
        try {
          if (std::optional<Value> v = o.rx->try_recv()) o.take(*v);
        } catch (const spool::oneshot::RecvError&) {
          // Closed first (or the sender is gone without a value): nothing to take.
        }
      }
      // Release: see closed_done.
      o.closed_done.fetch_add(1, std::memory_order_release);
    }
  }
  void after() {
    // Send: the value always arrives. Close: received if and only if send returned true.
    RL_ASSERT(o.received == o.sent && (kClose || o.sent));
    o.tear_down();
  }
};
using OneshotSendModel = OneshotModel<false>;
using OneshotCloseModel = OneshotModel<true>;

}  // namespace

int main() {
  if (int rc = spool::model::run_model<OneshotSendModel>("oneshot_send", 100000)) return rc;
  return spool::model::run_model<OneshotCloseModel>("oneshot_close", 100000);
}
