// The smaller parts of the socket API tokio users reach for, on both flavours: peek, sockets
// made elsewhere (from_fd), socket options (TTL, linger, broadcast), copy and
// copy_bidirectional.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/announce_wait.hpp"
#include "support/net.hpp"
#include "support/rt_flavor.hpp"

namespace socket_api_test {
namespace {

using spool::Task;
using spool::net::SocketAddr;
using spool::net::TcpListener;
using spool::net::TcpStream;
using spool::net::UdpSocket;
using spool::net::UnixStream;
using spool_net_test::pattern;
using spool_net_test::tcp_pair;

class SocketApi : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(SocketApi);

// A string literal ends with a NUL that a write would put on the wire ("PING" is 5 bytes):
// every write refuses one at compile time, and takes its string_view.
template <class S>
concept WritesALiteral = requires(S& s) {
  s.write_all("PING");
};
template <class S>
concept WritesAView = requires(S& s) {
  s.write_all(std::string_view("PING"));
};
template <class S>
concept WritesSomeOfALiteral = requires(S& s) {
  s.write("PING");
};
template <class S>
concept SendsALiteral = requires(S& s) {
  s.send("PING");
};
template <class S>
concept SendsALiteralTo = requires(S& s, SocketAddr a) {
  s.send_to("PING", a);
};
template <class S>
concept SendsAViewTo = requires(S& s, SocketAddr a) {
  s.send_to(std::string_view("PING"), a);
};
static_assert(!WritesALiteral<TcpStream> && WritesAView<TcpStream>);
static_assert(!WritesSomeOfALiteral<TcpStream>);
template <class S>
concept WritesAUtf8Literal = requires(S& s) {
  s.write_all(u8"PING");
};
static_assert(!WritesAUtf8Literal<TcpStream>);
static_assert(!WritesALiteral<UnixStream> && WritesAView<UnixStream>);
static_assert(!WritesALiteral<spool::net::BufWriter<TcpStream>> &&
              WritesAView<spool::net::BufWriter<TcpStream>>);
static_assert(!SendsALiteral<UdpSocket> && !SendsALiteralTo<UdpSocket> && SendsAViewTo<UdpSocket>);

// Reads `s` until the end of its stream.
template <class S>
Task<std::vector<std::uint8_t>> read_to_end(S& s) {
  std::vector<std::uint8_t> all;
  std::array<std::uint8_t, 4096> buf{};
  for (;;) {
    const std::size_t n = co_await s.read(buf);
    if (n == 0) co_return all;
    all.insert(all.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
  }
}

// The file an open descriptor refers to (a socket's or a pipe's inode is its own).
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
};
FileId file_of(int fd) {
  struct stat st {};
  EXPECT_EQ(::fstat(fd, &st), 0);
  return {st.st_dev, st.st_ino};
}
// Whether `fd` no longer refers to `file`: closed, or its number already taken again by
// another thread's open (the runtime's threads may open descriptors meanwhile).
bool is_closed(int fd, FileId file) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno == EBADF;
  return st.st_dev != file.dev || st.st_ino != file.ino;
}

// Whether the TCP socket `fd` is in the CLOSE state (reset, or never connected).
bool tcp_closed(int fd) {
  ::tcp_info info{};
  socklen_t len = sizeof info;
  return ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 && info.tcpi_state == TCP_CLOSE;
}

// A blocking socket of `type` bound to the loopback, made as other code would make it.
int raw_bound(int type) {
  const int fd = ::socket(AF_INET, type, 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sin), sizeof sin), 0);
  return fd;
}

// A blocking TCP listener on the loopback.
int raw_listener() {
  const int fd = raw_bound(SOCK_STREAM);
  EXPECT_EQ(::listen(fd, 8), 0);
  return fd;
}

TEST_P(SocketApi, PeekWaitsForDataAndLeavesItForTheNextRead) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto [a, b] = co_await tcp_pair();
    spool::Semaphore waiting(0);
    auto peeker = spool::spawn([](TcpStream& s, spool::Semaphore& w) -> Task<std::string> {
      std::array<char, 16> buf{};
      const std::size_t n = co_await spool_test::AnnounceWait(s.peek(buf), w);
      co_return std::string(buf.data(), n);
    }(b, waiting));
    (void)co_await waiting.acquire(1);  // the peek waits: nothing was sent yet
    co_await a.write_all(std::string_view("hello"));
    EXPECT_EQ(co_await peeker, "hello");
    std::array<char, 16> again{};
    EXPECT_EQ(co_await b.peek(again), 5u);  // still there, ready at once
    std::array<char, 5> in{};
    co_await b.read_exact(in);
    EXPECT_EQ(std::string_view(in.data(), in.size()), "hello");
    a.shutdown(SHUT_WR);
    EXPECT_EQ(co_await b.peek(again), 0u);  // the end of the stream
  }());
}

TEST_P(SocketApi, StreamsAndListenersMadeElsewhereAreTakenOver) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    // A blocking listener made by "other code", then a blocking client of it.
    const int lfd = raw_listener();
    TcpListener listener = TcpListener::from_fd(lfd);
    EXPECT_EQ(::fcntl(lfd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
    const int cfd = ::socket(AF_INET, SOCK_STREAM, 0);
    const SocketAddr addr = listener.local_addr();
    EXPECT_EQ(::connect(cfd, addr.data(), addr.size()), 0);  // the backlog takes it at once
    TcpStream client = TcpStream::from_fd(cfd);
    EXPECT_EQ(::fcntl(cfd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    auto [server, peer] = co_await listener.accept();
    EXPECT_EQ(peer, client.local_addr());
    co_await client.write_all(std::string_view("ping"));
    std::array<char, 4> in{};
    co_await server.read_exact(in);
    EXPECT_EQ(std::string_view(in.data(), in.size()), "ping");
  }());
}

TEST_P(SocketApi, DatagramAndUnixSocketsMadeElsewhereAreTakenOver) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    const int ufd = raw_bound(SOCK_DGRAM);
    UdpSocket server = UdpSocket::from_fd(ufd);
    auto client = UdpSocket::bind("127.0.0.1:0");
    co_await client.send_to(std::string_view("datagram"), server.local_addr());
    std::array<char, 16> buf{};
    auto [n, from] = co_await server.recv_from(buf);
    EXPECT_EQ(std::string_view(buf.data(), n), "datagram");
    EXPECT_EQ(from, client.local_addr());

    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    UnixStream left = UnixStream::from_fd(fds[0]);
    UnixStream right = UnixStream::from_fd(fds[1]);
    co_await left.write_all(std::string_view("unix"));
    std::array<char, 4> in{};
    co_await right.read_exact(in);
    EXPECT_EQ(std::string_view(in.data(), in.size()), "unix");
  }());
}

TEST_P(SocketApi, FromFdRefusesADescriptorOfAnotherKindAndClosesIt) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    int pipe_fds[2];
    EXPECT_EQ(::pipe(pipe_fds), 0);
    ::close(pipe_fds[1]);
    const FileId pipe_file = file_of(pipe_fds[0]);
    try {
      (void)TcpStream::from_fd(pipe_fds[0]);
      ADD_FAILURE() << "a pipe was taken for a TcpStream";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("is not a socket"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("TcpStream::from_fd"), std::string::npos);
    }
    EXPECT_TRUE(is_closed(pipe_fds[0], pipe_file));

    const int lfd = raw_listener();
    const FileId lfile = file_of(lfd);
    EXPECT_THROW((void)TcpStream::from_fd(lfd), std::invalid_argument);  // a listener
    EXPECT_TRUE(is_closed(lfd, lfile));
    const int tfd = ::socket(AF_INET, SOCK_STREAM, 0);
    const FileId tfile = file_of(tfd);
    try {
      (void)UdpSocket::from_fd(tfd);
      ADD_FAILURE() << "a TCP socket was taken for a UdpSocket";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("SOCK_STREAM socket of AF_INET (protocol 6)"),
                std::string::npos)
          << e.what();
    }
    EXPECT_TRUE(is_closed(tfd, tfile));
    const int ufd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    const FileId ufile = file_of(ufd);
    EXPECT_THROW((void)TcpStream::from_fd(ufd), std::invalid_argument);  // not AF_INET
    EXPECT_TRUE(is_closed(ufd, ufile));
    const int unconnected = ::socket(AF_INET, SOCK_STREAM, 0);
    const FileId unconnected_file = file_of(unconnected);
    try {
      (void)TcpStream::from_fd(unconnected);
      ADD_FAILURE() << "an unconnected socket was taken for a TcpStream";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("an unconnected SOCK_STREAM socket of AF_INET"),
                std::string::npos)
          << e.what();
    }
    EXPECT_TRUE(is_closed(unconnected, unconnected_file));
    // A connect refused by the peer's RST: one segment received, never connected.
    const int refused = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    const FileId refused_file = file_of(refused);
    const SocketAddr nobody = spool_net_test::closed_port(SOCK_STREAM);
    (void)::connect(refused, nobody.data(), nobody.size());
    ::pollfd refusal_seen{refused, POLLOUT, 0};
    EXPECT_EQ(::poll(&refusal_seen, 1, 60'000), 1);
    EXPECT_TRUE(tcp_closed(refused));
    EXPECT_THROW((void)TcpStream::from_fd(refused), std::invalid_argument);
    EXPECT_TRUE(is_closed(refused, refused_file));
    EXPECT_THROW((void)TcpListener::from_fd(-1), std::invalid_argument);  // not open
    co_return;
  }());
}

// A descriptor a spool socket of this runtime owns, handed to from_fd again, is refused
// with EEXIST and left open for its owner, which goes on working: on both backends (epoll
// refused it after closing it, io_uring took it twice), and before a refusal of its kind.
TEST_P(SocketApi, FromFdRefusesADescriptorASocketOwnsAlreadyAndLeavesItOpen) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    const int ufd = raw_bound(SOCK_DGRAM);
    UdpSocket server = UdpSocket::from_fd(ufd);
    const int lfd = raw_listener();
    TcpListener listener = TcpListener::from_fd(lfd);
    try {
      (void)UdpSocket::from_fd(ufd);
      ADD_FAILURE() << "a descriptor a UdpSocket owns was taken again";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::file_exists) << e.what();
      EXPECT_NE(std::string(e.what()).find("UdpSocket::from_fd"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("registered with this runtime's I/O driver already"),
                std::string::npos)
          << e.what();
    }
    EXPECT_THROW((void)TcpListener::from_fd(lfd), std::system_error);
    EXPECT_THROW((void)TcpStream::from_fd(lfd), std::system_error);  // a listener, and owned
    EXPECT_GE(::fcntl(ufd, F_GETFD), 0);
    EXPECT_GE(::fcntl(lfd, F_GETFD), 0);
    auto client = UdpSocket::bind("127.0.0.1:0");
    co_await client.send_to(std::string_view("still mine"), server.local_addr());
    std::array<char, 16> buf{};
    auto [n, from] = co_await server.recv_from(buf);
    EXPECT_EQ(std::string_view(buf.data(), n), "still mine");
    TcpStream c = co_await TcpStream::connect(listener.local_addr());
    auto [accepted, peer] = co_await listener.accept();
    EXPECT_EQ(peer, c.local_addr());
  }());
}

TEST_P(SocketApi, FromFdTakesAnAcceptedConnectionThatWasResetSinceAndReportsTheReset) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    const int lfd = raw_listener();
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    EXPECT_EQ(::getsockname(lfd, reinterpret_cast<sockaddr*>(&ss), &len), 0);
    const int cfd = ::socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(::connect(cfd, reinterpret_cast<sockaddr*>(&ss), len), 0);
    const int afd = ::accept(lfd, nullptr, nullptr);
    const ::linger reset{1, 0};
    EXPECT_EQ(::setsockopt(cfd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset), 0);
    ::close(cfd);  // the client resets before the accepted socket is handed over
    ::close(lfd);
    ::pollfd reset_seen{afd, POLLIN, 0};  // (an event, not a sleep: the reset has landed)
    EXPECT_EQ(::poll(&reset_seen, 1, 60'000), 1);
    EXPECT_TRUE(tcp_closed(afd));
    // No peer address any more (getpeername says ENOTCONN), but a connection all the
    // same, as tokio's from_std takes it: the reset is the read's error.
    TcpStream accepted = TcpStream::from_fd(afd);
    (void)co_await spool_net_test::read_expecting_reset(accepted);
  }());
}

// A connection handed over while connected keeps its peer's name for the error of a
// reset that comes later (when the kernel no longer gives it).
TEST_P(SocketApi, FromFdKeepsThePeerForTheErrorOfALaterReset) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    std::optional<TcpStream> client = co_await TcpStream::connect(listener.local_addr());
    const std::string client_name = "peer " + client->local_addr().to_string();
    auto [accepted, peer] = co_await listener.accept();
    TcpStream adopted = TcpStream::from_fd(::dup(accepted.source().fd()));
    client->set_linger(std::chrono::seconds(0));
    client.reset();  // sends RST
    const std::string what = co_await spool_net_test::read_expecting_reset(adopted);
    EXPECT_NE(what.find(client_name), std::string::npos) << what;
  }());
}

TEST_P(SocketApi, TtlLingerAndBroadcastAreSetAndRead) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto [a, b] = co_await tcp_pair();
    a.set_ttl(42);
    EXPECT_EQ(a.ttl(), 42);
    EXPECT_THROW(a.set_ttl(0), std::invalid_argument);
    EXPECT_THROW(a.set_ttl(256), std::invalid_argument);
    EXPECT_EQ(a.linger(), std::nullopt);
    a.set_linger(std::chrono::seconds(0));
    EXPECT_EQ(a.linger(), std::chrono::seconds(0));
    a.set_linger(std::nullopt);
    EXPECT_EQ(a.linger(), std::nullopt);
    // A longer linger would block the closing (runtime) thread.
    EXPECT_THROW(a.set_linger(std::chrono::seconds(5)), std::invalid_argument);
    EXPECT_EQ(a.linger(), std::nullopt);
    auto listener6 = TcpListener::bind("[::1]:0");
    TcpStream tcp6 = co_await TcpStream::connect(listener6.local_addr());
    tcp6.set_ttl(17);  // the hop limit, and IP_TTL for IPv4-mapped peers
    EXPECT_EQ(tcp6.ttl(), 17);
    int ip_ttl = 0;
    socklen_t len = sizeof ip_ttl;
    EXPECT_EQ(::getsockopt(tcp6.source().fd(), IPPROTO_IP, IP_TTL, &ip_ttl, &len), 0);
    EXPECT_EQ(ip_ttl, 17);

    auto v4 = UdpSocket::bind("127.0.0.1:0");
    v4.set_ttl(7);
    EXPECT_EQ(v4.ttl(), 7);
    EXPECT_FALSE(v4.broadcast());
    v4.set_broadcast(true);
    EXPECT_TRUE(v4.broadcast());
    auto v6 = UdpSocket::bind("[::1]:0");  // the hop limit
    v6.set_ttl(9);
    EXPECT_EQ(v6.ttl(), 9);
  }());
}

TEST_P(SocketApi, CopyMovesEveryByteUntilTheEnd) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto [in_w, in_r] = UnixStream::pair();
    auto [out_w, out_r] = UnixStream::pair();
    const std::vector<std::uint8_t> data = pattern(1 << 20);
    auto writer = spool::spawn([](UnixStream& s, const std::vector<std::uint8_t>& d) -> Task<void> {
      co_await s.write_all(d);
      s.shutdown(SHUT_WR);
    }(in_w, data));
    auto copier = spool::spawn([](UnixStream& from, UnixStream& to) -> Task<std::uint64_t> {
      const std::uint64_t n = co_await spool::net::copy(from, to);
      to.shutdown(SHUT_WR);
      co_return n;
    }(in_r, out_w));
    EXPECT_EQ(co_await read_to_end(out_r), data);
    EXPECT_EQ(co_await copier, data.size());
    co_await writer;
  }());
}

TEST_P(SocketApi, CopyIntoABufWriterFlushesEachChunkWhileItsReaderStaysOpen) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto in = UnixStream::pair();  // (not structured bindings: clang 14 cannot capture them)
    auto out = UnixStream::pair();
    UnixStream& in_w = in.first;
    UnixStream& in_r = in.second;
    UnixStream& out_r = out.second;
    spool::net::BufWriter writer(std::move(out.first));
    co_await in_w.write_all(std::string_view("request"));
    // The far end must see the request while copy still waits for more (as a proxied
    // request must reach its server before the reply can come); only then does the
    // reader's end come. Flushed only at the end, this would never finish: the timeout
    // makes that a failure, not a hang.
    auto far_end = [&]() -> Task<std::string> {
      std::array<char, 7> got{};
      co_await out_r.read_exact(got);
      in_w.shutdown(SHUT_WR);
      co_return std::string(got.data(), got.size());
    };
    auto result = co_await spool::timeout(
        std::chrono::seconds(30), spool::when_all(spool::net::copy(in_r, writer), far_end()));
    EXPECT_FALSE(result.elapsed()) << "the request waited in the BufWriter";
    if (result.elapsed()) co_return;
    auto [copied, got] = std::move(result).value();
    EXPECT_EQ(copied, 7u);
    EXPECT_EQ(got, "request");
  }());
}

TEST_P(SocketApi, CopyBidirectionalProxiesBothWaysAndPassesOnEachEnd) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto [client, a] = UnixStream::pair();
    auto [b, backend] = co_await tcp_pair();
    auto proxy = spool::spawn(spool::net::copy_bidirectional(a, b));
    const std::vector<std::uint8_t> up = pattern(300000, 1);
    const std::vector<std::uint8_t> down = pattern(200000, 2);
    auto sender = spool::spawn([](UnixStream& s, const std::vector<std::uint8_t>& d) -> Task<void> {
      co_await s.write_all(d);
      s.shutdown(SHUT_WR);
    }(client, up));
    EXPECT_EQ(co_await read_to_end(backend), up);  // the client's end reached the backend
    co_await backend.write_all(down);
    backend.shutdown(SHUT_WR);
    EXPECT_EQ(co_await read_to_end(client), down);
    co_await sender;
    const auto [to_b, to_a] = co_await proxy;
    EXPECT_EQ(to_b, up.size());
    EXPECT_EQ(to_a, down.size());
  }());
}

TEST_P(SocketApi, CopyBidirectionalPropagatesAReset) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto [client, a] = co_await tcp_pair();
    auto [b, backend] = co_await tcp_pair();
    auto proxy = spool::spawn(spool::net::copy_bidirectional(a, b));
    client.set_linger(std::chrono::seconds(0));  // its close resets the connection
    { TcpStream gone = std::move(client); }
    int error = 0;
    try {
      (void)co_await proxy;
    } catch (const spool::JoinError& e) {
      try {
        std::rethrow_exception(e.exception());
      } catch (const std::system_error& inner) {
        error = inner.code().value();
      }
    }
    EXPECT_EQ(error, ECONNRESET);
  }());
}

TEST_P(SocketApi, CopyBidirectionalEndsWhenTheSideToBeToldOfTheEndWasResetMeanwhile) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto [client, a] = co_await tcp_pair();
    auto [b, backend] = co_await tcp_pair();
    auto proxy = spool::spawn(spool::net::copy_bidirectional(a, b));
    co_await backend.write_all(std::string_view("hi"));
    backend.shutdown(SHUT_WR);  // the backend -> client way ends (the client sees "hi", end)
    const auto reply = co_await read_to_end(client);
    EXPECT_EQ(std::string(reply.begin(), reply.end()), "hi");
    backend.set_linger(std::chrono::seconds(0));
    { TcpStream gone = std::move(backend); }  // resets b, which nobody reads any more
    // Until the reset has reached b (CLOSE): then b's shutdown(SHUT_WR) says ENOTCONN.
    for (int i = 0; i < 1'000'000 && !tcp_closed(b.source().fd()); ++i) {
      co_await spool::yield_now();
    }
    EXPECT_TRUE(tcp_closed(b.source().fd()));
    client.shutdown(SHUT_WR);  // the client -> backend way ends: b cannot be told
    const auto [to_backend, to_client] = co_await proxy;
    EXPECT_EQ(to_backend, 0u);
    EXPECT_EQ(to_client, 2u);
    try {  // what the proxy's own shutdown of b met, and passed over
      b.shutdown(SHUT_WR);
      ADD_FAILURE() << "a reset socket was shut down";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code().value(), ENOTCONN) << e.what();
    }
  }());
}

TEST_P(SocketApi, ATcpSocketIsSetUpThenListensOrConnects) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto ls = spool::net::TcpSocket::new_v4();
    ls.set_reuseaddr(true);
    EXPECT_TRUE(ls.reuseaddr());
    ls.set_recv_buffer_size(64 * 1024);
    EXPECT_GE(ls.recv_buffer_size(), 64u * 1024);  // the kernel doubles it
    ls.bind(SocketAddr::parse("127.0.0.1:0"));
    const SocketAddr addr = ls.local_addr();
    EXPECT_NE(addr.port(), 0);
    TcpListener listener = std::move(ls).listen(16);
    EXPECT_EQ(listener.local_addr(), addr);
    EXPECT_THROW((void)ls.local_addr(), std::logic_error);  // listening now: moved from

    auto cs = spool::net::TcpSocket::for_address(addr);
    cs.set_send_buffer_size(32 * 1024);
    EXPECT_GE(cs.send_buffer_size(), 32u * 1024);
    cs.set_nodelay(true);
    cs.bind(SocketAddr::parse("127.0.0.1:0"));  // the outgoing connection's own address
    const SocketAddr from = cs.local_addr();
    TcpStream client = co_await std::move(cs).connect(addr);
    EXPECT_EQ(client.local_addr(), from);
    EXPECT_TRUE(client.nodelay());
    auto [server, peer] = co_await listener.accept();
    EXPECT_EQ(peer, from);
  }());
}

TEST_P(SocketApi, TwoTcpSocketsWithReuseportListenOnOnePort) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto a = spool::net::TcpSocket::new_v4();
    a.set_reuseport(true);
    EXPECT_TRUE(a.reuseport());
    a.bind(SocketAddr::parse("127.0.0.1:0"));
    const SocketAddr addr = a.local_addr();
    auto b = spool::net::TcpSocket::new_v4();
    b.set_reuseport(true);
    b.bind(addr);  // without SO_REUSEPORT: EADDRINUSE
    TcpListener la = std::move(a).listen(16);
    TcpListener lb = std::move(b).listen(16);
    auto c = spool::net::TcpSocket::new_v4();
    try {
      c.bind(addr);
      ADD_FAILURE() << "a third socket without SO_REUSEPORT bound a taken port";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code().value(), EADDRINUSE);
      EXPECT_NE(std::string(e.what()).find(addr.to_string()), std::string::npos) << e.what();
    }
    TcpStream client = co_await TcpStream::connect(addr);
    // The kernel gives the connection to one of the two listeners: whichever accepts it.
    auto won = co_await spool::when_any(la.accept(), lb.accept());
    const auto& [server, peer] = won.index() == 0 ? std::get<0>(won) : std::get<1>(won);
    EXPECT_EQ(peer, client.local_addr());
    EXPECT_EQ(server.local_addr(), addr);
  }());
}

TEST_P(SocketApi, ATcpSocketConnectRefusedNamesTheAddress) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    const SocketAddr nobody = spool_net_test::closed_port(SOCK_STREAM);
    auto s = spool::net::TcpSocket::new_v4();
    try {
      (void)co_await std::move(s).connect(nobody);
      ADD_FAILURE() << "connected to a closed port";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code().value(), ECONNREFUSED);
      EXPECT_NE(std::string(e.what()).find(nobody.to_string()), std::string::npos) << e.what();
    }
    EXPECT_THROW(s.set_nodelay(true), std::logic_error);  // moved from by the connect
    auto v4 = spool::net::TcpSocket::new_v4();
    try {
      v4.bind(SocketAddr::parse("[::1]:0"));
      ADD_FAILURE() << "an IPv4 socket took an IPv6 address";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("for_address"), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)std::move(v4).connect(SocketAddr::parse("[::1]:1")), std::invalid_argument);
  }());
}

TEST_P(SocketApi, AConnectFuturePolledAgainAfterItGaveItsStreamThrows) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    auto connect = TcpStream::connect(listener.local_addr());
    TcpStream first = co_await spool::poll_fn([&](spool::Context& cx) { return connect.poll(cx); });
    EXPECT_TRUE(co_await spool_net_test::one_poll_refused(connect, "polled again"));
  }());
}

}  // namespace
}  // namespace socket_api_test
