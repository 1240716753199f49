// FramedRead, FramedWrite and Framed over a scripted byte stream: many frames in one read, a
// frame over many reads, the end of the stream, errors of the stream and of the codec, the
// buffer reused, a move while a read is pending, partial and pending writes, a flush dropped
// half-way; a codec of the user's own; and Framed over a real socket pair.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "fuzz/codec_split.hpp"
#include "spool/block_on.hpp"
#include "spool/codec.hpp"
#include "spool/fs.hpp"
#include "spool/net.hpp"
#include "spool/runtime.hpp"
#include "spool/stream.hpp"
#include "support/hand_poll.hpp"
#include "support/scripted_bytes.hpp"

namespace {

using spool::Task;
using spool::codec::FramedRead;
using spool::codec::FramedWrite;
using spool::codec::LinesCodec;
using spool_codec_test::outcomes;
using spool_test::ScriptedBytes;

static_assert(spool::Stream<FramedRead<ScriptedBytes, LinesCodec>>);
static_assert(spool::Stream<spool::codec::Framed<spool::net::TcpStream, LinesCodec>>);
static_assert(
    std::is_same_v<spool::stream_item_t<FramedRead<ScriptedBytes, LinesCodec>>, std::string>);

// Every offset of `s` but 0: a read per byte.
std::set<std::size_t> every_byte(const std::string& s) {
  std::set<std::size_t> cuts;
  for (std::size_t i = 1; i < s.size(); ++i) cuts.insert(i);
  return cuts;
}

TEST(FramedRead, ManyFramesInOneReadComeOutOfThatRead) {
  FramedRead framed(ScriptedBytes("a\nbb\nccc\n"), LinesCodec());
  EXPECT_EQ(outcomes(framed), (std::vector<std::string>{"=a", "=bb", "=ccc"}));
  EXPECT_EQ(framed.get().reads(), 2);  // the bytes, then the end
}

TEST(FramedRead, AFrameSplitOverManyPendingReadsIsDecodedWhole) {
  const std::string input = "hello framed world\nand more\n";
  ScriptedBytes bytes(input, every_byte(input));
  bytes.pend_each(true);
  FramedRead framed(std::move(bytes), LinesCodec());
  EXPECT_EQ(outcomes(framed), (std::vector<std::string>{"=hello framed world", "=and more"}));
  EXPECT_EQ(framed.get().reads(), static_cast<int>(input.size()) + 1);
}

TEST(FramedRead, GivesNulloptAgainAfterTheEnd) {
  FramedRead framed(ScriptedBytes("x\n"), LinesCodec());
  EXPECT_EQ(outcomes(framed), (std::vector<std::string>{"=x"}));
  EXPECT_FALSE(spool::block_on(spool::next(framed)).has_value());
  EXPECT_EQ(framed.get().reads(), 2);  // the ended stream is not read again
}

// A BufReader has its inner stream's mark: one over a File is refused as the File is.
static_assert(spool::PendingIoOutlivesDrop<spool::fs::File>);
static_assert(spool::PendingIoOutlivesDrop<spool::net::BufReader<spool::fs::File>>);
static_assert(!spool::PendingIoOutlivesDrop<spool::net::BufReader<spool::net::TcpStream>>);

TEST(FramedRead, WorksWithTheStreamAdapters) {
  FramedRead framed(ScriptedBytes("1\n22\n333\n4444\n"), LinesCodec());
  auto lengths = spool::stream::map(spool::stream::take(framed, 3),
                                    [](const std::string& s) { return s.size(); });
  EXPECT_EQ(spool::block_on(spool::stream::collect(std::move(lengths))),
            (std::vector<std::size_t>{1, 2, 3}));
}

TEST(FramedRead, TheBufferIsReusedInSteadyState) {
  std::string input;
  for (int i = 0; i < 10000; ++i) {
    input.append(63, static_cast<char>('a' + i % 26));
    input.push_back('\n');
  }
  std::set<std::size_t> cuts;
  for (std::size_t at = 640; at < input.size(); at += 640) cuts.insert(at);
  FramedRead framed(ScriptedBytes(input, cuts), LinesCodec(1024));
  EXPECT_EQ(framed.read_buffer().capacity(), 0u);  // allocated at the first read
  EXPECT_EQ(framed.read_buffer().view().data(), nullptr);
  ASSERT_TRUE(spool::block_on(spool::next(framed)));
  const std::size_t capacity = framed.read_buffer().capacity();
  EXPECT_EQ(capacity, spool::codec::detail::kInitialCapacity);
  auto got = outcomes(framed);
  got.insert(got.begin(), "first");
  ASSERT_EQ(got.size(), 10000u);
  EXPECT_EQ(got[9999], "=" + std::string(63, static_cast<char>('a' + 9999 % 26)));
  EXPECT_EQ(framed.read_buffer().capacity(), capacity);
}

// A peer that fills every read (the first MiB: no cut in it) is read in larger and larger
// reads, up to 64 KiB; then one that sends a line per read (cut at every line) makes the
// reads smaller again and the storage go back to its first 8 KiB.
TEST(FramedRead, ReadsGrowForAFastPeerAndShrinkForASlowOne) {
  constexpr std::size_t kFastLines = 16384;  // 1 MiB of 64-byte lines
  constexpr std::size_t kSlowLines = 100;
  std::string input;
  std::set<std::size_t> cuts;
  for (std::size_t i = 0; i < kFastLines + kSlowLines; ++i) {
    input.append(63, 'x');
    input.push_back('\n');
    if (i >= kFastLines - 1) cuts.insert(input.size());
  }
  FramedRead framed(ScriptedBytes(input, cuts), LinesCodec(1024));
  for (std::size_t i = 0; i < kFastLines; ++i) ASSERT_TRUE(spool::block_on(spool::next(framed)));
  // 8, 8, 16 and 32 KiB, then 64 KiB reads (8 KiB ones would take 128).
  EXPECT_EQ(framed.get().reads(), 4 + (kFastLines * 64 - 64 * 1024) / 65536);
  EXPECT_EQ(framed.read_buffer().capacity(), spool::codec::detail::kMaxReadRoom);
  for (std::size_t i = 0; i < kSlowLines; ++i) ASSERT_TRUE(spool::block_on(spool::next(framed)));
  EXPECT_EQ(framed.read_buffer().capacity(), spool::codec::detail::kInitialCapacity);
}

TEST(FramedRead, AReadErrorComesOutAndTheNextPollReadsAfresh) {
  FramedRead framed(ScriptedBytes("a\nb\n", {2}), LinesCodec());
  EXPECT_EQ(*spool::block_on(spool::next(framed)), "a");
  framed.get().fail_next_read();
  EXPECT_THROW(spool::block_on(spool::next(framed)), std::runtime_error);
  EXPECT_EQ(outcomes(framed), (std::vector<std::string>{"=b"}));
}

TEST(FramedRead, MovedWhileAReadIsPendingGoesOnFromTheBufferedBytes) {
  ScriptedBytes bytes("first\nsecond\n", {3, 8});
  bytes.pend_each(true);
  const std::shared_ptr<const int> waiting = bytes.waiting();
  FramedRead framed(std::move(bytes), LinesCodec());
  spool_test::HandPoller poller;
  auto next = spool::next(framed);
  EXPECT_TRUE(poller.poll(next).is_pending());  // the first read pends
  EXPECT_TRUE(poller.poll(next).is_pending());  // "fir" read, the next read pending
  EXPECT_EQ(framed.read_buffer().view(), "fir");
  EXPECT_EQ(*waiting, 1);
  auto moved = std::move(framed);
  EXPECT_EQ(*waiting, 0);  // the moved-from reader let its pending read go
  EXPECT_EQ(outcomes(moved), (std::vector<std::string>{"=first", "=second"}));
}

// A codec of the user's own, without decode_eof: frames of exactly 3 bytes.
struct Triples {
  std::optional<std::string> decode(spool::codec::Buffer& buf) {
    if (buf.size() < 3) return std::nullopt;
    std::string frame(buf.view().substr(0, 3));
    buf.consume(3);
    return frame;
  }
};
static_assert(spool::codec::Decoder<Triples>);

TEST(FramedRead, ACodecWithoutDecodeEofMakesBytesLeftAtTheEndAnError) {
  FramedRead framed(ScriptedBytes("abcdefgh", {1, 4}), Triples());
  EXPECT_EQ(outcomes(framed), (std::vector<std::string>{"=abc", "=def", "!CodecError"}));
  FramedRead whole(ScriptedBytes("abcdef"), Triples());
  EXPECT_EQ(outcomes(whole), (std::vector<std::string>{"=abc", "=def"}));
}

TEST(FramedRead, TryNextGivesTheBufferedFramesWithoutReading) {
  FramedRead framed(ScriptedBytes("a\nb\nc", {4}), LinesCodec());
  EXPECT_EQ(framed.try_next(), std::nullopt);  // nothing read yet: no read either
  EXPECT_EQ(framed.get().reads(), 0);
  EXPECT_EQ(spool::block_on(spool::next(framed)), "a");
  EXPECT_EQ(framed.try_next(), "b");
  EXPECT_EQ(framed.try_next(), std::nullopt);  // "c" is not a whole line yet
  EXPECT_EQ(framed.get().reads(), 1);
  EXPECT_EQ(outcomes(framed), (std::vector<std::string>{"=c"}));
}

// Triples whose reads are given `room` bytes by prepare_read, and the storage it saw.
struct NarrowTriples : Triples {
  std::size_t room = 2;
  std::span<char> prepare_read(spool::codec::Buffer& buf) {
    buf.set_capacity(buf.size() + room);  // exactly the room, however large it was
    return buf.prepare(room);
  }
};

TEST(FramedRead, ACodecsPrepareReadDecidesTheRoomOfEachRead) {
  FramedRead framed(ScriptedBytes("abcdef"), NarrowTriples());
  EXPECT_EQ(outcomes(framed), (std::vector<std::string>{"=abc", "=def"}));
  EXPECT_EQ(framed.get().reads(), 4);  // 2 + 2 + 2 bytes, then the end
  EXPECT_EQ(framed.read_buffer().capacity(), 2u);

  FramedRead refused(ScriptedBytes("abc"), NarrowTriples{{}, 0});
  EXPECT_THROW(spool::block_on(spool::next(refused)), std::logic_error);
}

TEST(FramedWrite, PartialAndPendingWritesSendEveryFrameOnceInOrder) {
  ScriptedBytes bytes("");
  bytes.write_limit(3);
  bytes.pend_each(true);
  FramedWrite framed(std::move(bytes), LinesCodec());
  EXPECT_EQ(framed.write_buffer().capacity(), 0u);  // allocated at the first feed
  spool::block_on([](auto& f) -> Task<void> {
    f.feed("one");
    f.feed(std::string("two"));
    co_await f.send("three");
  }(framed));
  EXPECT_EQ(framed.get().written(), "one\ntwo\nthree\n");
  EXPECT_TRUE(framed.write_buffer().empty());
  EXPECT_EQ(framed.write_buffer().capacity(), spool::codec::detail::kInitialCapacity);
}

TEST(FramedWrite, AFlushDroppedWhilePendingLosesAndRepeatsNothing) {
  ScriptedBytes bytes("");
  bytes.write_limit(4);
  bytes.pend_each(true);
  FramedWrite framed(std::move(bytes), LinesCodec());
  spool_test::HandPoller poller;
  {
    auto flush = framed.send("abcdef");
    EXPECT_TRUE(poller.poll(flush).is_pending());  // the first write pends
    EXPECT_TRUE(poller.poll(flush).is_pending());  // 4 bytes written, the next write pends
  }
  EXPECT_EQ(framed.get().written(), "abcd");
  framed.feed("gh");  // behind the pending write, which the next flush goes on with
  spool::block_on(framed.flush());
  EXPECT_EQ(framed.get().written(), "abcdef\ngh\n");
}

TEST(FramedWrite, MovedWhileAWriteIsPendingLetsItGoAndWritesOnce) {
  ScriptedBytes bytes("");
  bytes.pend_each(true);
  const std::shared_ptr<const int> waiting = bytes.waiting();
  FramedWrite framed(std::move(bytes), LinesCodec());
  spool_test::HandPoller poller;
  std::optional<FramedWrite<ScriptedBytes, LinesCodec>> moved;
  {
    auto flush = framed.send("ab");
    EXPECT_TRUE(poller.poll(flush).is_pending());  // the write pends, having written nothing
    EXPECT_EQ(*waiting, 1);
    moved.emplace(std::move(framed));
    EXPECT_EQ(*waiting, 0);  // the moved-from writer let its pending write go
  }
  spool::block_on(moved->flush());
  EXPECT_EQ(moved->get().written(), "ab\n");
}

// A Flush dropped while its write pends keeps the write for the next flush, which writes
// the frame once: a stream whose dropped write still goes on (io::stdout() on a file, on
// the blocking pool) would otherwise write it twice.
TEST(FramedWrite, ADroppedFlushKeepsItsPendingWriteForTheNextFlush) {
  ScriptedBytes bytes("");
  bytes.pend_each(true);
  const std::shared_ptr<const int> waiting = bytes.waiting();
  FramedWrite framed(std::move(bytes), LinesCodec());
  spool_test::HandPoller poller;
  {
    auto flush = framed.send("ab");
    EXPECT_TRUE(poller.poll(flush).is_pending());
    EXPECT_EQ(*waiting, 1);
  }
  EXPECT_EQ(*waiting, 1);  // still the same write
  spool::block_on(framed.flush());
  EXPECT_EQ(framed.get().written(), "ab\n");
}

TEST(FramedWrite, AStreamAcceptingNothingIsAnErrorNotALoop) {
  ScriptedBytes bytes("");
  bytes.write_limit(0);
  FramedWrite framed(std::move(bytes), LinesCodec());
  EXPECT_THROW(spool::block_on(framed.send("x")), std::runtime_error);
}

TEST(FramedWrite, ACodecErrorBuffersNothing) {
  FramedWrite framed(ScriptedBytes(""), LinesCodec());
  EXPECT_THROW(framed.feed("two\nlines"), spool::codec::CodecError);
  EXPECT_TRUE(framed.write_buffer().empty());
}

// A feed after a flush dropped while its write pended (a select's other branch won) sends
// each frame once, on both backends. On io_uring a socket's write on a worker is a send on
// the worker's ring, which may go out although its future is dropped: the feed dropped the
// write and the next flush sent its bytes again ("a0 a0 b0 ...").
class FramedOnBackend : public ::testing::TestWithParam<spool::IoBackend> {};
INSTANTIATE_TEST_SUITE_P(Backends, FramedOnBackend,
                         ::testing::Values(spool::IoBackend::kEpoll, spool::IoBackend::kIoUring),
                         [](const auto& info) {
                           return std::string(spool::to_string(info.param));
                         });

TEST_P(FramedOnBackend, AFeedAfterADroppedFlushSendsEachFrameOnce) {
  std::optional<spool::Runtime> rt;
  try {
    rt.emplace(spool::Builder::multi_thread().worker_threads(2).io_backend(GetParam()).build());
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "no " << spool::to_string(GetParam()) << " here: " << e.what();
  }
  const std::string got = rt->block_on([]() -> Task<std::string> {
    auto [a, b] = spool::net::UnixStream::pair();
    // On a worker, where io_uring's sends run on the worker's ring.
    co_await spool::spawn([](spool::net::UnixStream s) -> Task<void> {
      spool::codec::Framed out(std::move(s), LinesCodec());
      for (int i = 0; i < 5; ++i) {
        out.feed("a" + std::to_string(i));
        {
          auto flush = out.flush();
          co_await spool::poll_fn([&](spool::Context& cx) -> spool::Poll<bool> {
            (void)flush.poll(cx);  // once: then dropped, pending or not
            return true;
          });
        }
        out.feed("b" + std::to_string(i));
        co_await out.flush();
      }
      out.get().shutdown(SHUT_WR);
    }(std::move(a)));
    spool::codec::FramedRead in(std::move(b), LinesCodec(64));
    std::string lines;
    while (auto line = co_await spool::next(in)) lines += *line + " ";
    co_return lines;
  }());
  EXPECT_EQ(got, "a0 b0 a1 b1 a2 b2 a3 b3 a4 b4 ");
}

TEST(Framed, LinesBothWaysOverASocketPair) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    auto [a, b] = spool::net::UnixStream::pair();
    spool::codec::Framed client(std::move(a), LinesCodec(64));
    spool::codec::Framed server(std::move(b), LinesCodec(64));
    for (int i = 0; i < 100; ++i) client.feed("request " + std::to_string(i));
    co_await client.flush();
    for (int i = 0; i < 100; ++i) {
      auto line = co_await spool::next(server);
      EXPECT_EQ(line, "request " + std::to_string(i));
      co_await server.send("reply to " + *line);
    }
    server.get().shutdown();
    for (int i = 0; i < 100; ++i) {
      EXPECT_EQ(co_await spool::next(client), "reply to request " + std::to_string(i));
    }
    EXPECT_EQ(co_await spool::next(client), std::nullopt);
  }());
}

}  // namespace
