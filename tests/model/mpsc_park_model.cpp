// Models of the receiver's park protocol of a bounded mpsc channel (include/spool/sync/mpsc.hpp,
// include/spool/detail/mpsc_chan.hpp, mpsc_ring.hpp; docs/sync.md), on the real channel:
// Sender::try_send (the Semaphore's lock-free path, MpscRing::push, then the sender's seq_cst
// load of rx_parked), Recv::poll (MpscChan::poll_recv: pop, register the waker, the seq_cst
// exchange of rx_parked, the re-check through reserved(), no_more_sends), the senders' drop
// and Receiver::close. The capacity (4) holds every value: no sender waits for room, so the
// Semaphore's waiter path is not used here. The receiver parks whenever a poll is pending.
//
// Invariants, in every suite:
//  - no lost wake-up: a receiver parked on a pending poll is woken, else park_until_woken
//    asserts once the other threads are done;
//  - every value is received at most once, each sender's values in the order it sent them;
//  - the channel's clones of the receiver's waker are all dropped with the channel.
// And per suite:
//  - MpscParkModel: two senders send two values each and keep their senders (so no drop's
//    wake-up can hide a missed push): the receiver gets all four;
//  - MpscEndModel: two senders send one value each, then drop their senders: the receiver
//    gets both values, then the end of the channel (drained first, then the end);
//  - MpscCloseModel: two senders try to send one value each (and keep their senders) while
//    the receiver closes and drains: each value is either received or refused to its sender
//    (kClosed), never both, never lost; the receiver ends with the end of the channel.
#include <optional>

#include "model/sync_model.hpp"
#include "spool/sync/mpsc.hpp"

namespace {

using spool::model::Pool;
using spool::model::Task;
using spool::mpsc::TrySendResult;

constexpr int kSenders = 2;

// What the suites share: the channel, the senders, the receiver's task and what it received.
template <int PerSender>
struct Channel {
  Pool pool;
  Task rx_task;
  std::optional<spool::mpsc::Sender<int>> tx[kSenders];
  std::optional<spool::mpsc::Receiver<int>> rx;
  // Senders done (each adds 1, release, after its last step): see park_until_woken.
  spool::detail::Atomic<int> done{0};
  int received[kSenders] = {};  // the receiver's: values received from each sender

  void set_up() {
    auto [t, r] = spool::mpsc::channel<int>(kSenders * 2);
    for (auto& s : tx) s.emplace(t);
    rx.emplace(std::move(r));
  }
  // A sender thread: its values are index * PerSender + k, sent in the order of k.
  TrySendResult send(unsigned index, int k) {
    int v = static_cast<int>(index) * PerSender + k;
    return tx[index]->try_send(std::move(v));
  }
  void sender_done() {
    // Release: see `done`.
    done.fetch_add(1, std::memory_order_release);
  }
  // The receiver thread: receives `count` values, or (count < 0) until the end of the
  // channel, parking on every pending poll. True when it stopped at the end.
  bool receive(int count) {
    spool::Waker w = spool::Waker::from_raw(pool.make(rx_task));
    spool::Context cx(w);
    auto recv = rx->recv();
    for (int n = 0; n != count;) {
      const int seen = rx_task.wakes.load(std::memory_order_relaxed);  // before the poll
      spool::Poll<std::optional<int>> p = recv.poll(cx);
      if (p.is_pending()) {
        spool::model::park_until_woken(rx_task, seen, done, kSenders);
        continue;
      }
      if (!p.value()) return true;  // the end of the channel
      const int v = *p.value();
      const int sender = v / PerSender;
      RL_ASSERT(v % PerSender == received[sender]);  // once each, in the sender's order
      ++received[sender];
      ++n;
    }
    return false;
  }
  void tear_down() {
    for (auto& s : tx) s.reset();
    rx.reset();
    RL_ASSERT(rx_task.refs.load(std::memory_order_relaxed) == 0);
  }
};

struct MpscParkModel : rl::test_suite<MpscParkModel, kSenders + 1> {
  static constexpr int kPerSender = 2;
  Channel<kPerSender> c;

  void before() { c.set_up(); }
  void thread(unsigned index) {
    if (index < kSenders) {
      for (int k = 0; k < kPerSender; ++k) RL_ASSERT(c.send(index, k) == TrySendResult::kSent);
      c.sender_done();
    } else {
      RL_ASSERT(!c.receive(kSenders * kPerSender));
    }
  }
  void after() { c.tear_down(); }
};

struct MpscEndModel : rl::test_suite<MpscEndModel, kSenders + 1> {
  Channel<1> c;

  void before() { c.set_up(); }
  void thread(unsigned index) {
    if (index < kSenders) {
      RL_ASSERT(c.send(index, 0) == TrySendResult::kSent);
      c.tx[index].reset();  // the last drop wakes the receiver with the end
      c.sender_done();
    } else {
      RL_ASSERT(c.receive(-1));
      for (int n : c.received) RL_ASSERT(n == 1);  // the end came after every value
    }
  }
  void after() { c.tear_down(); }
};

struct MpscCloseModel : rl::test_suite<MpscCloseModel, kSenders + 1> {
  Channel<1> c;
  TrySendResult result[kSenders] = {};  // each sender's: what its try_send returned

  void before() { c.set_up(); }
  void thread(unsigned index) {
    if (index < kSenders) {
      result[index] = c.send(index, 0);
      RL_ASSERT(result[index] != TrySendResult::kFull);
      c.sender_done();
    } else {
      c.rx->close();
      RL_ASSERT(c.receive(-1));
    }
  }
  void after() {
    for (int s = 0; s < kSenders; ++s) {
      // Received if and only if sent: never both received and refused, never lost.
      RL_ASSERT((c.received[s] == 1) == (result[s] == TrySendResult::kSent));
    }
    c.tear_down();
  }
};

}  // namespace

int main() {
  if (int rc = spool::model::run_model<MpscParkModel>("mpsc_park", 100000)) return rc;
  if (int rc = spool::model::run_model<MpscEndModel>("mpsc_end", 100000)) return rc;
  return spool::model::run_model<MpscCloseModel>("mpsc_close", 100000);
}
