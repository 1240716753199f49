// A socket operation polled again after its socket object was given another socket: moved
// away (a misuse, refused) or closed by an assignment (the operation goes on with the new
// socket), alike on the readiness path and on a worker's io_uring ring.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "spool/spool.hpp"
#include "support/net.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::Task;
using spool::net::TcpStream;
using spool_net_test::tcp_pair;

class SocketReassign : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(SocketReassign);

// Connects a and b, leaves a read of a pending (waiting on a's registration), then runs
// `then(a, b, b_peer, read, buf)`. Spawned by the tests: on io_uring's multi-thread runtime the
// read is then a receive on the worker's ring.
template <class Then>
Task<void> after_a_read_is_pending(Then then) {
  auto [a, a_peer] = co_await tcp_pair();
  auto [b, b_peer] = co_await tcp_pair();
  std::array<char, 8> buf{};
  auto read = a.read(buf);
  EXPECT_TRUE(co_await spool::poll_fn(
      [&](spool::Context& cx) -> spool::Poll<bool> { return read.poll(cx).is_pending(); }));
  co_await then(a, b, b_peer, read, buf);
}

// Polled again after its socket object was moved away, the read refuses to go on.
TEST_P(SocketReassign, AnOperationPolledAfterItsSocketObjectWasReassignedThrows) {
  auto rt = build();
  wait(rt, rt.spawn(after_a_read_is_pending(
               [](TcpStream& a, TcpStream& b, TcpStream&, auto& read, auto&) -> Task<void> {
                 TcpStream moved = std::move(a);  // the registration the read waits on moves away
                 a = std::move(b);                // and `a` is another socket now
                 EXPECT_TRUE(co_await spool_net_test::one_poll_refused(read, "moved away"));
               })));
}

// A read waiting on a socket whose object is then closed by an assignment goes on with the
// object's new socket (its waiters were let go, on the readiness path; on the ring, the
// receive on the closed socket is given up).
TEST_P(SocketReassign, AnOperationPolledAfterItsSocketObjectWasClosedByAnAssignmentGoesOn) {
  auto rt = build();
  wait(rt, rt.spawn(after_a_read_is_pending([](TcpStream& a, TcpStream& b, TcpStream& b_peer,
                                               auto& read, auto& buf) -> Task<void> {
    a = std::move(b);  // a's first socket is closed; `a` holds b's now
    co_await b_peer.write_all(std::string_view("new"));
    const std::size_t n = co_await read;
    EXPECT_EQ(std::string_view(buf.data(), n), "new");
  })));
}

}  // namespace
