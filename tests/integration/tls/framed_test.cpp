// spool::codec's framed types over a TLS stream, whose pending read or write holds the
// connection's side: a framed reader move-assigned while its read pends lets that read go
// before the old connection is freed (ASan), and a framed writer's send waits for the TLS
// stream's own flush.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "spool/codec.hpp"
#include "support/time_helpers.hpp"
#include "support/tls.hpp"

namespace {

using spool::Task;
using spool_time_test::poll_once;
using namespace spool_tls_test;
using Lines = spool::codec::FramedRead<PipeStream, spool::codec::LinesCodec>;

TEST(TlsFramed, AReaderMoveAssignedWhileItsReadPendsLetsTheReadGoFirst) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    auto [old_client, old_server] = co_await piped_pair();
    auto [new_client, new_server] = co_await piped_pair();
    Lines lines(std::move(old_client), spool::codec::LinesCodec(1024));
    {
      auto next = spool::next(lines);
      EXPECT_FALSE(co_await poll_once(next));  // nothing sent: the reader's read pends
    }
    // A reconnect: the old connection is freed by this assignment, after the pending read
    // that holds its reading side is gone (before the fix, ASan: heap-use-after-free).
    lines = Lines(std::move(new_client), spool::codec::LinesCodec(1024));
    co_await new_server.write_all(std::string_view("hello\n"));
    const std::optional<std::string> line = co_await spool::next(lines);
    EXPECT_EQ(line, "hello");
  }());
}

TEST(TlsFramed, FramesSentAndFedComeOutInOrder) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    auto [client, server] = co_await piped_pair();
    spool::codec::FramedWrite out(std::move(client), spool::codec::LinesCodec());
    co_await out.send("one");
    {
      [[maybe_unused]] auto dropped = out.send("two");  // never polled: "two" stays buffered
    }
    co_await out.flush();
    co_await out.get().shutdown();
    Lines in(std::move(server), spool::codec::LinesCodec(1024));
    EXPECT_EQ(co_await spool::next(in), "one");
    EXPECT_EQ(co_await spool::next(in), "two");
    EXPECT_EQ(co_await spool::next(in), std::nullopt);
  }());
}

// With the transport full (the server never reads), TLS holds the records it encrypts: a
// send is not done until the stream's own flush is (before the fix it was ready at once,
// and the frame could be lost), and a send dropped while that flush pends leaves the
// stream's writing side free (before, its shutdown threw "a write ... pending").
TEST(TlsFramed, SendWaitsForTheStreamsFlushAndADroppedSendFreesTheStream) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    auto [client, server] = co_await piped_pair();
    const std::string chunk(4096, 'f');
    for (;;) {
      auto raw = client.get_ref().write(chunk);
      if (!co_await poll_once(raw)) break;  // the pipe is full
    }
    spool::codec::FramedWrite out(std::move(client), spool::codec::LinesCodec());
    {
      auto send = out.send("line");
      EXPECT_FALSE(co_await poll_once(send));  // encrypted, not yet taken by the transport
    }
    auto shutdown = out.get().shutdown();
    EXPECT_FALSE(co_await poll_once(shutdown));  // pends on the full pipe, and throws nothing
  }());
}

}  // namespace
