// Socket streams' reads and writes on the worker's own io_uring (src/net/ring_stream.hpp):
// content over many round trips; a read dropped with its receive in flight (its bytes go to
// the next read, and the kernel never writes into the dropped future's buffer: ASan); a
// peer's close ends a pending receive; a dropped send is cancelled, so the socket closes;
// one buffer per socket and direction, reused (steady traffic allocates nothing), and large
// reads and writes straight between the socket and the caller's buffer; a second read or
// write while one is pending waits for it, and a write after a dropped send for its answer;
// a close ends a read pending on the ring (its task wakes, the peer sees the end).
#include <gtest/gtest.h>
#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "net/ring_stream.hpp"
#include "spool/coop.hpp"
#include "spool/core/poll_fn.hpp"
#include "spool/net.hpp"
#include "spool/runtime.hpp"
#include "support/counting_waker.hpp"
#include "support/hand_poll.hpp"

namespace {

using spool::Task;
using spool::net::UnixStream;
using spool_test::CountingWaker;

class RingStream : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      rt_.emplace(spool::Builder::multi_thread()
                      .worker_threads(1)
                      .io_backend(spool::IoBackend::kIoUring)
                      .build());
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "io_uring cannot run here: " << e.what();
    }
  }
  template <class T>
  T run(Task<T> t) {
    return rt_->block_on(rt_->spawn(std::move(t)));
  }
  std::optional<spool::Runtime> rt_;
};

// Polls `f` once (it is then pending, its entry queued on this worker's ring), then yields
// so that the worker, out of tasks, submits the entry.
template <class F>
Task<void> start(F& f) {
  co_await spool::poll_fn([&](spool::Context& cx) -> spool::Poll<bool> {
    EXPECT_TRUE(f.poll(cx).is_pending());
    return true;
  });
  co_await spool::yield_now();
}

Task<void> echo(UnixStream s) {
  std::array<char, 256> buf{};
  for (;;) {
    const std::size_t n = co_await s.read(buf);
    if (n == 0) co_return;
    co_await s.write_all(std::span(buf.data(), n));
  }
}

Task<bool> round_trips() {
  auto [a, b] = UnixStream::pair();
  auto server = spool::spawn(echo(std::move(b)));
  bool same = true;
  for (int i = 0; i < 2'000; ++i) {
    std::string out(64, static_cast<char>('a' + i % 26));
    out[0] = static_cast<char>(i & 0x7f);
    co_await a.write_all(std::string_view(out));
    std::string in(64, '\0');
    co_await a.read_exact(in);
    same = same && in == out;
  }
  const bool on_ring = a.source().ring_fd() != nullptr;
  a.source().close();
  co_await std::move(server);
  co_return same&& on_ring;
}

TEST_F(RingStream, ContentSurvivesManyRoundTripsOnTheRing) { EXPECT_TRUE(run(round_trips())); }

// Whether a socket of a runtime on `backend` lets its reads and writes try the ring.
bool ring_streams_on(spool::IoBackend backend) {
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(1).io_backend(backend).build();
  return rt.block_on([]() -> Task<bool> {
    auto [a, b] = UnixStream::pair();
    co_return a.source().ring_streams() && b.source().ring_streams();
  }());
}

TEST_F(RingStream, OnlyAnIoUringRuntimesSocketsTryTheRing) {
  // epoll's futures then never call into the ring's code (docs/io.md).
  EXPECT_TRUE(ring_streams_on(spool::IoBackend::kIoUring));
  EXPECT_FALSE(ring_streams_on(spool::IoBackend::kEpoll));
}

Task<std::string> dropped_read_keeps_its_bytes() {
  auto [a, b] = UnixStream::pair();
  {
    auto buf = std::make_unique<std::array<char, 64>>();
    auto f = a.read(*buf);
    co_await start(f);  // the receive is in the kernel now
    // Both go: the kernel's answer must land in the operation's own buffer.
  }
  co_await b.write_all(std::string_view("hello"));
  std::array<char, 64> again{};
  const std::size_t n = co_await a.read(again);
  co_return std::string(again.data(), n);
}

TEST_F(RingStream, AReadDroppedWithItsReceiveInFlightLeavesItsBytesForTheNextRead) {
  EXPECT_EQ(run(dropped_read_keeps_its_bytes()), "hello");
}

Task<std::string> small_reads_take_one_receive_in_turn() {
  auto [a, b] = UnixStream::pair();
  {
    std::array<char, 64> buf{};
    auto f = a.read(buf);
    co_await start(f);  // a receive with room for 64 bytes, orphaned
  }
  co_await b.write_all(std::string_view("abcdef"));
  std::string got;
  for (int i = 0; i < 3; ++i) {
    std::array<char, 2> two{};
    const std::size_t n = co_await a.read(two);
    got.append(two.data(), n);
  }
  co_return got;
}

TEST_F(RingStream, BytesAReadHadNoRoomForGoToTheNextInOrder) {
  EXPECT_EQ(run(small_reads_take_one_receive_in_turn()), "abcdef");
}

Task<std::size_t> read_all(UnixStream s) {
  std::array<char, 64> buf{};
  co_return co_await s.read(buf);
}

Task<std::size_t> peer_close_mid_receive() {
  auto [a, b] = UnixStream::pair();
  auto reader = spool::spawn(read_all(std::move(a)));
  co_await spool::yield_now();  // the reader's receive is in flight
  co_await spool::yield_now();
  { UnixStream gone = std::move(b); }
  co_return co_await std::move(reader);
}

TEST_F(RingStream, APeersCloseEndsAPendingReceiveWithTheEndOfTheStream) {
  EXPECT_EQ(run(peer_close_mid_receive()), 0u);
}

Task<std::size_t> dropped_read_then_close() {
  auto [a, b] = UnixStream::pair();
  {
    std::array<char, 64> buf{};
    auto f = a.read(buf);
    co_await start(f);
  }
  a.source().close();  // the orphaned receive is cancelled, then the descriptor closes
  std::array<char, 64> buf{};
  co_return co_await b.read(buf);
}

TEST_F(RingStream, ASocketClosedAfterADroppedReadClosesForItsPeer) {
  EXPECT_EQ(run(dropped_read_then_close()), 0u);
}

Task<std::size_t> dropped_send_then_close() {
  auto [a, b] = UnixStream::pair();
  std::vector<char> big(1 << 20, 'x');
  {
    auto f = a.write_all(std::span(big.data(), big.size()));
    co_await start(f);  // more than the socket holds: a send waits in the kernel
  }
  a.source().close();  // the send is cancelled; the peer sees the end after what was sent
  std::size_t total = 0;
  std::vector<char> buf(1 << 16);
  for (;;) {
    const std::size_t n = co_await b.read(buf);
    if (n == 0) co_return total;
    total += n;
  }
}

TEST_F(RingStream, ASendDroppedInFlightIsCancelledSoTheSocketCloses) {
  EXPECT_LT(run(dropped_send_then_close()), std::size_t{1} << 20);
}

std::uint64_t made() { return spool::detail::stream_ops_made.load(std::memory_order_relaxed); }

Task<std::uint64_t> ops_made_by_steady_round_trips() {
  auto [a, b] = UnixStream::pair();
  auto server = spool::spawn(echo(std::move(b)));
  std::string out(64, 'x');
  std::string in(64, '\0');
  for (int i = 0; i < 10; ++i) {  // each socket's first operations make its buffers
    co_await a.write_all(std::string_view(out));
    co_await a.read_exact(in);
  }
  const std::uint64_t before = made();
  for (int i = 0; i < 1'000; ++i) {
    co_await a.write_all(std::string_view(out));
    co_await a.read_exact(in);
  }
  const std::uint64_t after = made();
  a.source().close();
  co_await std::move(server);
  co_return after - before;
}

TEST_F(RingStream, SteadyTrafficReusesEachSocketsBufferOfEachDirection) {
  const std::uint64_t before = made();
  EXPECT_EQ(run(ops_made_by_steady_round_trips()), 0u);
  EXPECT_GE(made() - before, 2u);  // the client's receive and send at least: on the ring
}

// The operations a 32 KiB write_all makes on a fresh socket whose peer has room for it all,
// and whether the peer reads the same bytes.
Task<std::pair<std::uint64_t, bool>> large_write_the_socket_takes() {
  auto [a, b] = UnixStream::pair();
  std::string out(std::size_t{32} << 10, '\0');
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(i % 251);
  const std::uint64_t before = made();
  co_await a.write_all(std::string_view(out));
  const std::uint64_t ops = made() - before;
  std::string in(out.size(), '\0');
  co_await b.read_exact(in);
  co_return std::pair(ops, in == out);
}

TEST_F(RingStream, ALargeWriteTheSocketTakesGoesStraightFromTheCallersBuffer) {
  // One send from the caller's buffer, no copy into the socket's 4 KiB one.
  EXPECT_EQ(run(large_write_the_socket_takes()), std::pair(std::uint64_t{0}, true));
}

// What two 64 KiB reads of a give after b wrote 64 KiB.
Task<std::pair<std::size_t, std::size_t>> reads_after_a_filled_receive() {
  auto [a, b] = UnixStream::pair();
  co_await b.write_all(std::string(std::size_t{64} << 10, 'z'));
  std::vector<char> buf(std::size_t{64} << 10);
  const std::size_t first = co_await a.read(buf);
  const std::size_t second = co_await a.read(buf);
  co_return std::pair(first, second);
}

TEST_F(RingStream, AReadAfterAReceiveThatFilledItsBufferTakesWhatIsQueuedAtOnce) {
  // The first read's receive fills the socket's 4 KiB buffer; the second takes the other
  // 60 KiB with one recv into the caller's buffer (through the ring: 4 KiB).
  EXPECT_EQ(run(reads_after_a_filled_receive()),
            std::pair(std::size_t{4} << 10, std::size_t{60} << 10));
}

// Polls `f` once with `w`'s waker: whether it was pending.
template <class F>
bool pending_with(F& f, const CountingWaker& w) {
  const spool::Waker waker = w.waker();
  spool::Context cx(waker);
  return f.poll(cx).is_pending();
}

// Two reads of one socket, polled once each: the first's receive holds the socket's read
// side, and the second waits for it (no second receive).
struct TwoReads {
  TwoReads(UnixStream& s, const CountingWaker& w1, const CountingWaker& w2)
      : first(s.read(one)), second(s.read(two)) {
    EXPECT_TRUE(pending_with(first, w1));
    EXPECT_TRUE(pending_with(second, w2));
  }
  std::array<char, 8> one{};
  std::array<char, 8> two{};
  spool::net::ReadFuture first;
  spool::net::ReadFuture second;
};

Task<std::string> second_read_while_one_is_pending() {
  auto [a, b] = UnixStream::pair();
  CountingWaker w1;
  CountingWaker w2;
  TwoReads r(a, w1, w2);
  EXPECT_EQ(w2.counts().total_wakes(), 0);
  co_await b.write_all(std::string_view("hi"));
  const std::size_t n =
      co_await spool::poll_fn([&](spool::Context& cx) { return r.first.poll(cx); });
  EXPECT_EQ(w2.counts().total_wakes(), 1);  // the read side given back wakes the second
  std::string got(r.one.data(), n);
  co_await b.write_all(std::string_view("yo"));
  const std::size_t m =
      co_await spool::poll_fn([&](spool::Context& cx) { return r.second.poll(cx); });
  co_return got + "|" + std::string(r.two.data(), m);
}

TEST_F(RingStream, ASecondReadWaitsForThePendingOneAndGetsTheBytesAfterIt) {
  EXPECT_EQ(run(second_read_while_one_is_pending()), "hi|yo");
}

Task<std::string> second_read_dropped_with_the_first() {
  auto [a, b] = UnixStream::pair();
  {
    CountingWaker w;
    TwoReads r(a, w, w);
    co_await spool::yield_now();  // the first's receive goes to the kernel
    co_await b.write_all(std::string_view("abc"));
  }  // both dropped: one receive, so one orphan, and no byte lost
  co_await b.write_all(std::string_view("def"));
  std::string got(6, '\0');
  co_await a.read_exact(got);
  co_return got;
}

TEST_F(RingStream, TwoPendingReadsDroppedTogetherLoseNoBytes) {
  EXPECT_EQ(run(second_read_dropped_with_the_first()), "abcdef");
}

Task<std::string> second_write_while_one_is_pending() {
  auto [a, b] = UnixStream::pair();
  auto first = a.write(std::string_view("ab"));
  auto second = a.write(std::string_view("cd"));
  CountingWaker w1;
  CountingWaker w2;
  EXPECT_TRUE(pending_with(first, w1));  // its send waits for the worker's next reap
  EXPECT_TRUE(pending_with(second, w2));
  EXPECT_EQ(w2.counts().total_wakes(), 0);
  EXPECT_EQ(co_await spool::poll_fn([&](spool::Context& cx) { return first.poll(cx); }), 2u);
  EXPECT_EQ(w2.counts().total_wakes(), 1);
  EXPECT_EQ(co_await spool::poll_fn([&](spool::Context& cx) { return second.poll(cx); }), 2u);
  std::string got(4, '\0');
  co_await b.read_exact(got);
  co_return got;
}

TEST_F(RingStream, ASecondWriteWaitsForThePendingOne) {
  EXPECT_EQ(run(second_write_while_one_is_pending()), "abcd");
}

}  // namespace

namespace {

// Reads `s` to its end: whether its bytes are `fill`s, then `tail`.
Task<bool> read_fill_then(UnixStream s, char fill, std::string_view tail) {
  std::string got;
  std::vector<char> buf(1 << 16);
  for (;;) {
    const std::size_t n = co_await s.read(buf);
    if (n == 0) break;
    got.append(buf.data(), n);
  }
  if (!std::string_view(got).ends_with(tail)) co_return false;
  got.resize(got.size() - tail.size());
  co_return got.find_first_not_of(fill) == std::string::npos;
}

Task<bool> write_after_a_dropped_send() {
  auto [a, b] = UnixStream::pair();
  std::vector<char> big(1 << 20, 'x');
  {
    auto f = a.write_all(std::span(big.data(), big.size()));
    co_await start(f);  // its send waits in the kernel for room, and is cancelled here
  }
  if (a.source().ring_fd() == nullptr) {
    ADD_FAILURE() << "the write did not use the ring";
    co_return false;
  }
  spool::detail::RingFd& fd = *a.source().ring_fd();
  CountingWaker w;
  const spool::Waker waker = w.waker();
  spool::Context cx(waker);
  if (fd.claim_write(cx)) {
    ADD_FAILURE() << "the dropped send gave the write side back before its answer";
    fd.end_write();
  }
  // Given back when the send's answer arrives (the cancel's, or the bytes it sent).
  co_await spool::poll_fn([&](spool::Context& cx) -> spool::Poll<bool> {
    if (!fd.claim_write(cx)) return spool::pending;
    fd.end_write();
    return true;
  });
  EXPECT_EQ(w.counts().total_wakes(), 1);
  auto reader = spool::spawn(read_fill_then(std::move(b), 'x', "END"));  // (the socket is full)
  co_await a.write_all(std::string_view("END"));
  a.source().close();
  co_return co_await std::move(reader);
}

TEST_F(RingStream, ASendDroppedInFlightHoldsTheWriteSideUntilItsAnswer) {
  // A later write on another worker's ring could otherwise go out before its rest.
  EXPECT_TRUE(run(write_after_a_dropped_send()));
}

Task<bool> write_off_the_ring_waits_for_the_rings_send() {
  auto [a, b] = UnixStream::pair();
  spool::detail::RingFd& fd = spool::detail::make_ring_fd(a.source());
  CountingWaker holder;
  const spool::Waker holder_waker = holder.waker();
  spool::Context holder_cx(holder_waker);
  EXPECT_TRUE(fd.claim_write(holder_cx));  // as a send pending on a worker's ring would
  auto write = a.write(std::string_view("abc"));
  CountingWaker w;
  EXPECT_TRUE(pending_with(write, w));
  fd.end_write();
  EXPECT_EQ(w.counts().total_wakes(), 1);
  EXPECT_FALSE(pending_with(write, w));
  std::string got(3, '\0');
  co_await b.read_exact(got);
  co_return got == "abc";
}

TEST_F(RingStream, AWriteOnAThreadWithoutARingWaitsForASendPendingOnARing) {
  // block_on's thread has no ring: its write takes the readiness path, after the ring's.
  EXPECT_TRUE(rt_->block_on(write_off_the_ring_waits_for_the_rings_send()));
}

Task<bool> vectored_write_waits_for_the_rings_send() {
  auto [a, b] = UnixStream::pair();
  spool::detail::RingFd& fd = spool::detail::make_ring_fd(a.source());
  CountingWaker holder;
  const spool::Waker holder_waker = holder.waker();
  spool::Context holder_cx(holder_waker);
  EXPECT_TRUE(fd.claim_write(holder_cx));  // as a send pending on a ring would
  const std::string_view ab = "ab";
  const std::string_view c = "c";
  const iovec parts[] = {spool::net::io_buffer(ab), spool::net::io_buffer(c)};
  auto write = a.write_vectored(parts);
  CountingWaker w;
  EXPECT_TRUE(pending_with(write, w));
  fd.end_write();
  EXPECT_EQ(w.counts().total_wakes(), 1);
  EXPECT_FALSE(pending_with(write, w));
  std::string got(3, '\0');
  co_await b.read_exact(got);
  co_return got == "abc";
}

TEST_F(RingStream, AVectoredWriteWaitsForASendPendingOnARing) {
  // write_vectored always takes the readiness path: after the ring's send, as any write.
  EXPECT_TRUE(run(vectored_write_waits_for_the_rings_send()));
}

// Yields until `party` was woken, at most `turns` times (each turn lets the worker reap its
// ring): the count of turns bounds the wait, no clock.
Task<int> wakes_after_turns(const spool_test::HandPoller& party, int turns) {
  for (int i = 0; i < turns && party.wakes() == 0; ++i) co_await spool::yield_now();
  co_return party.wakes();
}

Task<bool> close_wakes_a_pending_read() {
  auto [a, b] = UnixStream::pair();
  spool_test::HandPoller party;
  std::array<char, 64> buf{};
  auto f = a.read(buf);
  EXPECT_TRUE(party.poll(f).is_pending());
  co_await spool::yield_now();  // the receive goes to the kernel
  a.source().close();
  EXPECT_EQ(co_await wakes_after_turns(party, 10'000), 1);
  bool threw = false;
  try {
    (void)party.poll(f);
  } catch (const std::logic_error&) {
    threw = true;
  }
  std::array<char, 64> peer{};
  EXPECT_EQ(co_await b.read(peer), 0u);  // the descriptor closed: the peer sees the end
  co_return threw;
}

// A receive in flight on the ring kept the descriptor open, and its task waiting, until the
// peer sent: the close shuts the socket down for reading.
TEST_F(RingStream, ACloseWakesAReadPendingOnTheRingAndClosesForThePeer) {
  EXPECT_TRUE(run(close_wakes_a_pending_read()));
}

}  // namespace
