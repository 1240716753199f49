// Misuse of a TLS stream gets a clear std::logic_error, never a hang or a crash: a second
// reader or writer while one is pending (a side has one waker), a moved-from stream or
// half. Copying does not compile. A server name OpenSSL would truncate is refused.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "support/time_helpers.hpp"
#include "support/tls.hpp"

namespace {

using spool::Task;
using spool_time_test::poll_once;
using namespace spool_tls_test;

static_assert(!std::is_copy_constructible_v<Stream> && std::is_move_constructible_v<Stream>);
static_assert(!std::is_copy_constructible_v<Stream::ReadHalf>);
static_assert(!std::is_copy_constructible_v<Stream::WriteHalf>);
static_assert(!std::is_copy_constructible_v<Stream::OwnedReadHalf>);
static_assert(!std::is_copy_constructible_v<Stream::OwnedWriteHalf>);

// Polls `f` once and expects a std::logic_error whose message has `expected` (once: without
// the check, the second waiter would wait for ever).
template <class F>
Task<void> expect_logic_error(F f, std::string expected) {
  try {
    (void)co_await poll_once(f);
    ADD_FAILURE() << "no error; expected one saying " << expected;
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

TEST(TlsMisuse, ASecondReadWhileOneIsPendingIsRefusedUntilTheFirstEnds) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    auto [client, server] = co_await piped_pair();
    auto [in, out] = client.split();
    std::string first(5, '\0');
    std::string second(5, '\0');
    {
      auto waiting = in.read(first);
      EXPECT_FALSE(co_await poll_once(waiting));  // nothing sent yet
      co_await expect_logic_error(in.read(second), "a read while another read");
      co_await expect_logic_error(client.read(second), "a read while another read");
    }  // dropped: the side is free again
    co_await server.write_all(std::string_view("hello"));
    co_await in.read_exact(second);
    EXPECT_EQ(second, "hello");
  }());
}

TEST(TlsMisuse, AShutdownWhileAWriteIsPendingIsRefused) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    auto [client, server] = co_await piped_pair();
    const std::vector<char> big(1 << 20, 'x');  // more than the pipe holds
    {
      auto waiting = client.write_all(big);
      EXPECT_FALSE(co_await poll_once(waiting));
      co_await expect_logic_error(client.shutdown(), "a write or shutdown while another");
      co_await expect_logic_error(client.write(big), "a write or shutdown while another");
    }
    auto drain = spool::spawn([](PipeStream& s) -> Task<void> {
      std::vector<char> buf(64 * 1024);
      while (co_await s.read(buf) != 0) {
      }
    }(server));
    co_await client.shutdown();  // the side is free again (the dropped write's record first)
    co_await drain;
  }());
}

TEST(TlsMisuse, AMovedFromStreamOrHalfIsRefused) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    auto [client, server] = co_await piped_pair();
    auto [in, out] = std::move(client).into_split();
    std::string buf(1, '\0');
    EXPECT_THROW((void)client.version(), std::logic_error);
    EXPECT_THROW((void)client.native_handle(), std::logic_error);
    EXPECT_THROW((void)client.read(buf), std::logic_error);
    try {
      (void)client.split();
      ADD_FAILURE() << "split() of a moved-from stream succeeded";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("TlsStream: used after it was moved from"),
                std::string::npos)
          << e.what();
    }
    auto reader = std::move(in);
    EXPECT_THROW((void)in.read(buf), std::logic_error);
    auto writer = std::move(out);
    EXPECT_THROW((void)out.shutdown(), std::logic_error);
    co_await writer.shutdown();  // the live ones work
    EXPECT_EQ(co_await server.read(buf), 0u);
  }());
}

TEST(TlsMisuse, AMovedFromConnectorIsRefused) {
  spool::tls::TlsConnector connector(client_builder().build());
  const spool::tls::TlsConnector moved = std::move(connector);
  auto [r, w] = spool::pipe();
  try {
    (void)connector.connect("localhost", Pipes(std::move(r), std::move(w)));
    ADD_FAILURE() << "a moved-from connector connected";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("moved-from TlsConnector"), std::string::npos) << e.what();
  }
}

// OpenSSL takes a server name as a C string: "localhost\0.evil.example" would be verified
// against a certificate for localhost (and sent as SNI) as "localhost", "127.0.0.1\0junk"
// as 127.0.0.1. connect refuses such a name at once, verifying or not, and sends nothing.
TEST(TlsMisuse, AServerNameWithANulByteIsRefusedBeforeAnythingIsSent) {
  auto trusting = client_builder();
  trusting.verify(spool::tls::Verify::kNone);
  const spool::tls::TlsConnector verifying(client_builder().build());
  const spool::tls::TlsConnector not_verifying(trusting.build());
  auto rt = spool::Builder::current_thread().build();
  for (const spool::tls::TlsConnector* connector : {&verifying, &not_verifying}) {
    for (const std::string& name : {std::string("localhost\0.evil.example", 23),
                                    std::string("127.0.0.1\0junk", 14), std::string(1, '\0')}) {
      rt.block_on([](const spool::tls::TlsConnector& c, const std::string& n) -> Task<void> {
        auto [client_in, server_out] = spool::pipe();
        auto [server_in, client_out] = spool::pipe();
        try {
          (void)c.connect(n, Pipes(std::move(client_in), std::move(client_out)));
          ADD_FAILURE() << "connect accepted a name with a NUL byte";
        } catch (const std::invalid_argument& e) {
          const std::string expected = "NUL byte at offset " + std::to_string(n.find('\0'));
          EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
        }
        // The refused connection closed its transport without writing to it.
        std::string got(1, '\0');
        EXPECT_EQ(co_await server_in.read(got), 0u);
      }(*connector, name));
    }
  }
}

}  // namespace
