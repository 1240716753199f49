// Several tasks waiting on one direction of one socket at once, on both flavours (and, as
// io_uring:..., both backends): two accept loops on one listener, three receivers on one
// UDP socket, two writers on one full stream, and a waiter that is dropped while the others
// wait. Each waiting task is woken: none waits for ever (docs/io.md, "Registrations").
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/announce_wait.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::Task;
using spool::net::SocketAddr;
using spool::net::TcpListener;
using spool::net::TcpStream;
using spool::net::UdpSocket;
using spool::net::UnixStream;

class SharedWaiters : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(SharedWaiters);

using spool_test::AnnounceWait;

Task<SocketAddr> accept_one(TcpListener& listener, spool::Semaphore& waiting) {
  auto [stream, peer] = co_await AnnounceWait(listener.accept(), waiting);
  co_return peer;
}

// The peers the two accepts gave, sorted, against the two clients' addresses, sorted.
void expect_same_peers(std::vector<SocketAddr> got, std::vector<SocketAddr> want) {
  auto by_text = [](const SocketAddr& a, const SocketAddr& b) {
    return a.to_string() < b.to_string();
  };
  std::sort(got.begin(), got.end(), by_text);
  std::sort(want.begin(), want.end(), by_text);
  EXPECT_EQ(got, want);
}

TEST_P(SharedWaiters, TwoTasksAcceptOnOneListener) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    spool::Semaphore waiting(0);
    auto a = spool::spawn(accept_one(listener, waiting));
    auto b = spool::spawn(accept_one(listener, waiting));
    (void)co_await waiting.acquire(2);  // both wait: one owns the waker, one is queued
    auto c1 = co_await TcpStream::connect(listener.local_addr());
    auto c2 = co_await TcpStream::connect(listener.local_addr());
    std::vector<SocketAddr> peers;
    peers.push_back(co_await a);
    peers.push_back(co_await b);
    expect_same_peers(peers, {c1.local_addr(), c2.local_addr()});
  }());
}

Task<std::string> recv_one(UdpSocket& socket, spool::Semaphore& waiting) {
  std::array<char, 64> buf{};
  auto [n, from] = co_await AnnounceWait(socket.recv_from(buf), waiting);
  co_return std::string(buf.data(), n);
}

TEST_P(SharedWaiters, ThreeTasksReceiveOnOneUdpSocket) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto server = UdpSocket::bind("127.0.0.1:0");
    auto client = UdpSocket::bind("127.0.0.1:0");
    spool::Semaphore waiting(0);
    std::vector<spool::JoinHandle<std::string>> receivers;
    for (int i = 0; i < 3; ++i) receivers.push_back(spool::spawn(recv_one(server, waiting)));
    (void)co_await waiting.acquire(3);
    const std::vector<std::string> sent = {"one", "two", "three"};
    for (const std::string& m : sent) co_await client.send_to(m, server.local_addr());
    std::vector<std::string> got;
    for (auto& r : receivers) got.push_back(co_await r);
    std::sort(got.begin(), got.end());
    std::vector<std::string> want = sent;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want);
  }());
}

Task<std::size_t> write_block(UnixStream& stream, const std::vector<char>& block,
                              spool::Semaphore& waiting) {
  co_return co_await AnnounceWait(stream.write_all(block), waiting);
}

TEST_P(SharedWaiters, TwoTasksWriteToOneFullStream) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto [left, right] = UnixStream::pair();
    // Far more than a Unix socket buffers: each write_all waits before it is done.
    const std::vector<char> block(4 << 20, 'x');
    spool::Semaphore waiting(0);
    auto a = spool::spawn(write_block(left, block, waiting));
    auto b = spool::spawn(write_block(left, block, waiting));
    (void)co_await waiting.acquire(2);  // both wait to write
    std::vector<char> in(2 * block.size());
    EXPECT_EQ(co_await right.read_exact(in), in.size());
    EXPECT_EQ(co_await a, block.size());
    EXPECT_EQ(co_await b, block.size());
  }());
}

// The first waiter owns the direction's waker and the second is queued; dropping either
// (an abort, as a timeout or a select would) must leave the other one waiting, and woken.
class DroppedWaiter : public ::testing::TestWithParam<std::pair<spool_rt_test::Flavor, int>> {};

TEST_P(DroppedWaiter, TheOtherAcceptIsStillWoken) {
  const auto [flavor, dropped] = GetParam();
  auto rt = spool_rt_test::flavor_builder(flavor).build();
  rt.block_on([](int dropped) -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    spool::Semaphore first(0);
    spool::Semaphore second(0);
    std::array<std::optional<spool::JoinHandle<SocketAddr>>, 2> accepts;
    accepts[0].emplace(spool::spawn(accept_one(listener, first)));
    (void)co_await first.acquire(1);  // the owner waits
    accepts[1].emplace(spool::spawn(accept_one(listener, second)));
    (void)co_await second.acquire(1);  // and the queued one
    auto& gone = *accepts[static_cast<std::size_t>(dropped)];
    auto& kept = *accepts[static_cast<std::size_t>(1 - dropped)];
    gone.abort();
    bool cancelled = false;
    try {
      (void)co_await gone;
    } catch (const spool::JoinError& e) {
      cancelled = e.is_cancelled();
    }
    EXPECT_TRUE(cancelled);
    auto client = co_await TcpStream::connect(listener.local_addr());
    EXPECT_EQ(co_await kept, client.local_addr());
  }(dropped));
}

INSTANTIATE_TEST_SUITE_P(All, DroppedWaiter,
                         ::testing::Values(std::pair{spool_rt_test::Flavor::kMultiThread, 0},
                                           std::pair{spool_rt_test::Flavor::kMultiThread, 1},
                                           std::pair{spool_rt_test::Flavor::kCurrentThread, 0},
                                           std::pair{spool_rt_test::Flavor::kCurrentThread, 1}),
                         [](const auto& info) {
                           return spool_rt_test::flavor_name(info.param.first) +
                                  (info.param.second == 0 ? "_TheOwner" : "_TheQueuedOne");
                         });

}  // namespace
