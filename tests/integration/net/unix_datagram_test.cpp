// UnixDatagram: send_to / recv_from between bound paths, connected send / recv, a
// socketpair, an unbound sender, a receive that waits, under both flavours and a foreign
// executor; the errors name the path; from_fd refuses a stream socket.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/time_helpers.hpp"

namespace {

using spool::Task;
using spool::net::UnixDatagram;

// A fresh path in the temporary directory, removed again when the guard goes.
class TempPath {
 public:
  explicit TempPath(const char* name)
      : path_((std::filesystem::temp_directory_path() /
               ("spool-dgram-" + std::to_string(::getpid()) + "-" + name + ".sock"))
                  .string()) {
    std::filesystem::remove(path_);
  }
  ~TempPath() { std::filesystem::remove(path_); }
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  const std::string& str() const { return path_; }

 private:
  std::string path_;
};

class UnixDgram : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(UnixDgram);

// A server task answers each datagram to its sender's path, reversed; the client's
// recv_from waits for each answer (it is sent only after the request).
TEST_P(UnixDgram, SendToAndRecvFromBetweenBoundPaths) {
  auto rt = build();
  TempPath server_path(is_multi_thread() ? "srv-mt" : "srv-ct");
  TempPath client_path(is_multi_thread() ? "cli-mt" : "cli-ct");
  rt.block_on([](std::string sp, std::string cp) -> Task<void> {
    auto server = UnixDatagram::bind(sp);
    auto client = UnixDatagram::bind(cp);
    EXPECT_EQ(server.local_path(), sp);
    auto echo = spool::spawn([](UnixDatagram& s) -> Task<void> {
      std::array<char, 64> buf{};
      for (int i = 0; i < 20; ++i) {
        auto [n, from] = co_await s.recv_from(buf);
        std::string out(buf.data(), n);
        co_await s.send_to(std::string(out.rbegin(), out.rend()), from);
      }
    }(server));
    for (int i = 0; i < 20; ++i) {
      const std::string out = "abc" + std::to_string(i);
      EXPECT_EQ(co_await client.send_to(out, sp), out.size());
      std::array<char, 64> in{};
      auto [n, from] = co_await client.recv_from(in);
      EXPECT_EQ(from, sp);
      EXPECT_EQ(std::string(in.data(), n), std::string(out.rbegin(), out.rend()));
    }
    co_await echo;
  }(server_path.str(), client_path.str()));
}

// connect() fixes the peer: send / recv keep datagram boundaries, peer_path names it.
TEST_P(UnixDgram, ConnectedSendAndRecv) {
  auto rt = build();
  TempPath a_path(is_multi_thread() ? "a-mt" : "a-ct");
  TempPath b_path(is_multi_thread() ? "b-mt" : "b-ct");
  rt.block_on([](std::string ap, std::string bp) -> Task<void> {
    auto a = UnixDatagram::bind(ap);
    auto b = UnixDatagram::bind(bp);
    a.connect(bp);
    EXPECT_EQ(a.peer_path(), bp);
    for (std::string_view m : {"one", "two", "three"}) co_await a.send(m);
    for (std::string_view m : {"one", "two", "three"}) {
      std::array<char, 64> buf{};
      const std::size_t n = co_await b.recv(buf);
      EXPECT_EQ(std::string_view(buf.data(), n), m);
    }
  }(a_path.str(), b_path.str()));
}

// A pair talks both ways; an unbound sender is "" to its receiver.
TEST_P(UnixDgram, PairAndUnboundSender) {
  auto rt = build();
  TempPath path(is_multi_thread() ? "u-mt" : "u-ct");
  rt.block_on([](std::string p) -> Task<void> {
    auto [x, y] = UnixDatagram::pair();
    co_await x.send(std::string_view("ping"));
    std::array<char, 8> buf{};
    EXPECT_EQ(co_await y.recv(buf), 4u);
    co_await y.send(std::string_view("pong"));
    EXPECT_EQ(co_await x.recv(buf), 4u);
    EXPECT_EQ(std::string_view(buf.data(), 4), "pong");
    auto bound = UnixDatagram::bind(p);
    auto anon = UnixDatagram::unbound();
    EXPECT_EQ(anon.local_path(), "");
    co_await anon.send_to(std::string_view("hi"), p);
    auto [n, from] = co_await bound.recv_from(buf);
    EXPECT_EQ(n, 2u);
    EXPECT_EQ(from, "");
  }(path.str()));
}

// Outside every runtime, with no reactor slot: a recv that must wait for its datagram
// (sent by another thread once the receiver has returned pending).
TEST(UnixDgramForeign, RecvUnderAnExecutorWithoutReactorSlot) {
  auto pair = UnixDatagram::pair();
  UnixDatagram& x = pair.first;
  UnixDatagram& y = pair.second;
  // Counted up by run_foreign at each pending poll (seq_cst increment, then notify_all);
  // the sender waits on it, so the datagram comes only after the receiver waits.
  std::atomic<int> pending{0};
  std::thread sender([&pending, &x] {
    pending.wait(0);
    spool::block_on(x.send(std::string_view("late")));
  });
  auto recv = [](UnixDatagram& y) -> Task<std::string> {
    std::array<char, 8> buf{};
    const std::size_t n = co_await y.recv(buf);
    co_return std::string(buf.data(), n);
  }(y);
  EXPECT_EQ(spool_time_test::run_foreign(recv, nullptr, &pending), "late");
  sender.join();
}

TEST(UnixDgramErrors, TheyNameThePath) {
  TempPath path("in-use");
  TempPath missing("missing");
  auto first = UnixDatagram::bind(path.str());
  try {
    (void)UnixDatagram::bind(path.str());
    ADD_FAILURE() << "bound twice";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::address_in_use);
    EXPECT_NE(std::string(e.what()).find(path.str()), std::string::npos) << e.what();
  }
  try {
    first.connect(missing.str());
    ADD_FAILURE() << "connected to nothing";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory);
    EXPECT_NE(std::string(e.what()).find(missing.str()), std::string::npos) << e.what();
  }
  spool::block_on([](UnixDatagram& s, std::string p) -> Task<void> {
    try {
      co_await s.send_to(std::string_view("x"), p);
      ADD_FAILURE() << "sent to nothing";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory);
      EXPECT_NE(std::string(e.what()).find("send_to " + p), std::string::npos) << e.what();
    }
  }(first, missing.str()));
  EXPECT_THROW((void)UnixDatagram::bind(""), std::invalid_argument);
  EXPECT_THROW((void)UnixDatagram::bind(std::string(200, 'x')), std::invalid_argument);
}

TEST(UnixDgramErrors, FromFdRefusesAStreamSocket) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  try {
    (void)UnixDatagram::from_fd(sv[0]);
    ADD_FAILURE() << "a stream socket was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("SOCK_STREAM"), std::string::npos) << e.what();
  }
  ::close(sv[1]);
  int dg[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_DGRAM, 0, dg), 0);
  spool::block_on([](int a, int b) -> Task<void> {
    auto x = UnixDatagram::from_fd(a);
    auto y = UnixDatagram::from_fd(b);
    co_await x.send(std::string_view("ok"));
    std::array<char, 4> buf{};
    EXPECT_EQ(co_await y.recv(buf), 2u);
  }(dg[0], dg[1]));
}

}  // namespace
