// BufReader and BufWriter over a socket pair: lines split across reads, a tiny buffer that
// must grow, read_exact across refills, the line limit, a line read cancelled half-way, a
// BufReader over a read half (docs/io.md's example), buffered writes, and a flush cancelled
// half-way.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "spool/spool.hpp"
#include "support/net.hpp"

namespace {

using spool::Task;
using spool::net::BufReader;
using spool::net::BufWriter;
using spool::net::UnixStream;

// Sends `text` in pieces of `piece` bytes, yielding between them, then ends the stream (a
// local: a parameter would live, and keep the stream open, until the task is joined).
Task<void> send_in_pieces(UnixStream stream, std::string text, std::size_t piece) {
  UnixStream s = std::move(stream);
  for (std::size_t i = 0; i < text.size(); i += piece) {
    co_await s.write_all(std::string_view(text).substr(i, piece));
    co_await spool::yield_now();
  }
}

TEST(BufReader, ReadsLinesSplitAcrossReadsWithATinyBuffer) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    auto [a, b] = UnixStream::pair();
    auto writer = spool::spawn(send_in_pieces(std::move(a), "first line\r\nsecond\n\nno end", 3));
    BufReader<UnixStream> r(std::move(b), 4);  // lines longer than the buffer: it grows
    std::string line;
    EXPECT_EQ(co_await r.read_line(line), 12u);
    EXPECT_EQ(line, "first line\r\n");
    line.clear();
    co_await r.read_line(line);
    EXPECT_EQ(line, "second\n");
    line.clear();
    co_await r.read_line(line);
    EXPECT_EQ(line, "\n");
    line.clear();
    EXPECT_EQ(co_await r.read_line(line), 6u);  // the end of the stream ends the last line
    EXPECT_EQ(line, "no end");
    line.clear();
    EXPECT_EQ(co_await r.read_line(line), 0u);
    co_await writer;
  }());
}

TEST(BufReader, ReadExactAndReadUntilShareTheBuffer) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    auto [a, b] = UnixStream::pair();
    auto writer = spool::spawn(send_in_pieces(std::move(a), "$5\r\nhello\r\n*", 5));
    BufReader<UnixStream> r(std::move(b), 8);
    std::string header;
    co_await r.read_until('\n', header);
    EXPECT_EQ(header, "$5\r\n");
    std::string payload(7, '\0');
    co_await r.read_exact(payload);
    EXPECT_EQ(payload, "hello\r\n");
    std::string rest(2, '\0');
    try {
      co_await r.read_exact(rest);
      ADD_FAILURE() << "read_exact read past the end";
    } catch (const spool::net::UnexpectedEof& e) {
      EXPECT_NE(std::string(e.what()).find("1 of 2"), std::string::npos) << e.what();
    }
    co_await writer;
  }());
}

TEST(BufReader, ReadGivesTheBufferFirstAndReadsLargeBuffersStraightThrough) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    auto [a, b] = UnixStream::pair();
    BufReader<UnixStream> r(std::move(b), 16);
    co_await a.write_all(std::string_view("line\nrest"));
    std::string line;
    co_await r.read_line(line);
    EXPECT_EQ(line, "line\n");
    std::array<char, 3> small{};
    EXPECT_EQ(co_await r.read(small), 3u);  // from the buffer, no system call
    EXPECT_EQ(std::string_view(small.data(), 3), "res");
    EXPECT_EQ(r.buffered().size(), 1u);
    std::array<char, 32> large{};
    EXPECT_EQ(co_await r.read(large), 1u);  // what was buffered, even if more could come
    EXPECT_EQ(large[0], 't');
    // Empty buffer, a destination larger than it: straight from the stream, all 20 bytes at
    // once (through the buffer, at most its 16 would come).
    co_await a.write_all(std::string_view("0123456789abcdefghij"));
    EXPECT_EQ(co_await r.read(large), 20u);
    EXPECT_EQ(std::string_view(large.data(), 20), "0123456789abcdefghij");
    EXPECT_EQ(r.buffered().size(), 0u);
    EXPECT_EQ(co_await r.read(std::span<char>()), 0u);
    // Any buffer the stream's read takes; with the buffer empty and a small destination,
    // one read fills the buffer, and what fits is copied out.
    co_await a.write_all(std::string_view("abcd"));
    std::vector<std::uint8_t> bytes(2);
    EXPECT_EQ(co_await r.read(bytes), 2u);
    EXPECT_EQ(bytes, (std::vector<std::uint8_t>{'a', 'b'}));
    EXPECT_EQ(r.buffered().size(), 2u);
    std::string rest(2, '\0');
    EXPECT_EQ(co_await r.read(rest), 2u);
    EXPECT_EQ(rest, "cd");
    { UnixStream gone = std::move(a); }  // the writer closes: the end of the stream
    EXPECT_EQ(co_await r.read(small), 0u);
  }());
}

TEST(BufReader, ALineLongerThanTheLimitThrowsLengthError) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    auto [a, b] = UnixStream::pair();
    co_await a.write_all(std::string(100, 'x'));
    BufReader<UnixStream> r(std::move(b), 16);
    std::string line;
    EXPECT_THROW(co_await r.read_line(line, 64), std::length_error);
    EXPECT_LE(line.size(), 64u);
  }());
}

// read_line is cancel-safe: a timeout that drops it in the middle of a line leaves the part
// read in `out`, and the next read_line appends the rest, so `out` holds the whole line.
TEST(BufReader, ALineCutByATimeoutIsCompletedByTheNextReadLine) {
  auto rt = spool::Builder::current_thread().start_paused(true).build();
  rt.block_on([]() -> Task<void> {
    auto [a, b] = UnixStream::pair();
    BufReader<UnixStream> r(std::move(b), 4);  // smaller than the part: it spans refills
    co_await a.write_all(std::string_view("hello, "));
    std::string line;
    const auto cut = co_await spool::timeout(std::chrono::seconds(1), r.read_line(line));
    EXPECT_TRUE(cut.elapsed());
    EXPECT_EQ(line, "hello, ");
    co_await a.write_all(std::string_view("world\nnext"));
    EXPECT_EQ(co_await r.read_line(line), 6u);  // what this call appended
    EXPECT_EQ(line, "hello, world\n");
    EXPECT_EQ(std::string_view(r.buffered().data(), r.buffered().size()), "ne");
  }());
}

// docs/io.md's example of "Halves and lines", as written there: lines read through a
// BufReader over an owned read half, written back by another task through the write half.
using spool::net::TcpStream;

spool::Task<void> write_lines(TcpStream::OwnedWriteHalf half,
                              spool::mpsc::Receiver<std::string> lines) {
  BufWriter<TcpStream::OwnedWriteHalf> out(std::move(half));
  while (std::optional<std::string> line = co_await lines.recv()) {
    co_await out.write_all(*line);
    co_await out.flush();
  }
}

spool::Task<void> echo_lines(TcpStream stream) {
  auto [read_half, write_half] = std::move(stream).into_split();
  auto [tx, rx] = spool::mpsc::unbounded_channel<std::string>();
  spool::JoinHandle<void> writer = spool::spawn(write_lines(std::move(write_half), std::move(rx)));
  {
    spool::mpsc::UnboundedSender<std::string> lines = std::move(tx);
    BufReader<TcpStream::OwnedReadHalf> in(std::move(read_half));
    std::string line;
    while (co_await in.read_line(line, 64 * 1024) > 0) {  // 0: the end of the stream
      lines.send(std::move(line));
      line.clear();
    }
  }  // the last sender is gone: the writer's recv gives nullopt after the queued lines
  co_await writer;
}

Task<void> serve_one(spool::net::TcpListener listener) {
  spool::net::TcpListener l = std::move(listener);
  auto [stream, peer] = co_await l.accept();
  co_await echo_lines(std::move(stream));
}

// The peer gets every line back, the last one without its "\n" too, then the end of the
// stream once the server's halves are gone.
TEST(BufReader, OverAnOwnedReadHalfWhileAnotherTaskWritesTheWriteHalf) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  rt.block_on([]() -> Task<void> {
    auto listener = spool::net::TcpListener::bind("127.0.0.1:0");
    const spool::net::SocketAddr addr = listener.local_addr();
    auto server = spool::spawn(serve_one(std::move(listener)));
    TcpStream client = co_await TcpStream::connect(addr);
    co_await client.write_all(std::string_view("one\ntwo\nlast"));
    client.shutdown();
    std::string echoed;
    std::array<char, 64> buf{};
    while (const std::size_t n = co_await client.read(buf)) echoed.append(buf.data(), n);
    EXPECT_EQ(echoed, "one\ntwo\nlast");
    co_await server;
  }());
}

TEST(BufWriter, CollectsSmallWritesUntilFlushAndPassesLargeOnesThrough) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    auto [a, b] = UnixStream::pair();
    BufWriter<UnixStream> w(std::move(a), 16);
    co_await w.write_all(std::string_view("+OK\r\n"));
    co_await w.write_all(std::string_view(":1\r\n"));
    EXPECT_EQ(w.pending(), 9u);  // nothing sent yet
    const std::string big(40, 'y');
    co_await w.write_all(big);  // flushes the 9 bytes, then sends the 40 directly
    EXPECT_EQ(w.pending(), 0u);
    co_await w.write_all(std::string_view("end"));
    co_await w.flush();
    std::string in(9 + 40 + 3, '\0');
    co_await b.read_exact(in);
    EXPECT_EQ(in, "+OK\r\n:1\r\n" + big + "end");
  }());
}

// Everything `stream` reads until the peer ends its side.
Task<std::vector<std::uint8_t>> read_to_end(UnixStream stream) {
  UnixStream s = std::move(stream);
  std::vector<std::uint8_t> all;
  std::array<std::uint8_t, 64 * 1024> buf{};
  for (;;) {
    const std::size_t n = co_await s.read(buf);
    if (n == 0) co_return all;
    all.insert(all.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
  }
}

// flush() is cancel-safe: cancelled once the socket's buffer is full, it keeps exactly what
// it has not sent, and the next flush sends that, so the peer gets every byte once, in order.
TEST(BufWriter, AFlushCancelledHalfWaySendsTheRestOnceNextTime) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    auto [a, b] = UnixStream::pair();
    const std::vector<std::uint8_t> data = spool_net_test::pattern(8 << 20);
    const std::span<const char> bytes(reinterpret_cast<const char*>(data.data()), data.size());
    BufWriter<UnixStream> w(std::move(a), data.size() + 1);
    co_await w.write_all(bytes);
    EXPECT_EQ(w.pending(), data.size());
    {
      auto flush = w.flush();
      const spool::Waker noop = spool::Waker::noop();
      spool::Context cx(noop);
      EXPECT_TRUE(flush.poll(cx).is_pending());  // nobody reads: the socket's buffer fills
    }                                            // dropped: cancelled half-way
    EXPECT_GT(w.pending(), 0u);
    EXPECT_LT(w.pending(), data.size());  // some was sent, and left the buffer
    auto reader = spool::spawn(read_to_end(std::move(b)));
    co_await w.flush();
    EXPECT_EQ(w.pending(), 0u);
    w.get().shutdown();
    const std::vector<std::uint8_t> got = co_await reader;
    EXPECT_EQ(got.size(), data.size());
    EXPECT_TRUE(got == data);  // not EXPECT_EQ: a mismatch would print 8 MB
  }());
}

// A flush cancelled at its first poll, then flushed again, sends each byte once, on a worker
// too (run with SPOOL_IO_BACKEND=io_uring, where a worker's write is a send on its ring that
// may go out although its future is dropped: the cancelled write is kept, not written again).
TEST(BufWriter, AFlushCancelledAtItsFirstPollSendsEachByteOnce) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  const std::string got = rt.block_on([]() -> Task<std::string> {
    auto [a, b] = UnixStream::pair();
    co_await spool::spawn([](UnixStream s) -> Task<void> {  // on a worker
      BufWriter<UnixStream> w(std::move(s));
      for (int i = 0; i < 5; ++i) {
        co_await w.write_all(std::string_view("x" + std::to_string(i) + " "));
        {
          auto flush = w.flush();
          co_await spool::poll_fn([&](spool::Context& cx) -> spool::Poll<bool> {
            (void)flush.poll(cx);  // once: then dropped, pending or not
            return true;
          });
        }
        co_await w.flush();
      }
      w.get().shutdown();
    }(std::move(a)));
    const std::vector<std::uint8_t> bytes = co_await read_to_end(std::move(b));
    co_return std::string(bytes.begin(), bytes.end());
  }());
  EXPECT_EQ(got, "x0 x1 x2 x3 x4 ");
}

}  // namespace
