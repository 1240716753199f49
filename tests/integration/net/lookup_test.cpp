// spool::net::lookup_host: numeric addresses at once, "localhost" through getaddrinfo on the
// blocking pool or a thread of its own, and the errors.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <system_error>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::Task;
using spool::net::SocketAddr;

class LookupHost : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(LookupHost);

TEST_P(LookupHost, LocalhostResolvesOnTheBlockingPoolAndConnects) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = spool::net::TcpListener::bind("127.0.0.1:0");
    const auto addrs = co_await spool::net::lookup_host("localhost", listener.local_addr().port());
    EXPECT_FALSE(addrs.empty());
    bool found = false;
    for (const SocketAddr& a : addrs) found = found || a == listener.local_addr();
    EXPECT_TRUE(found) << "localhost did not give 127.0.0.1";
    auto s = co_await spool::net::TcpStream::connect(listener.local_addr());
    EXPECT_EQ(s.peer_addr(), listener.local_addr());
  }());
  EXPECT_GE(rt.metrics().blocking_threads, 1u) << "getaddrinfo did not run on the blocking pool";
}

TEST(LookupHostAnyExecutor, NumericTextNeedsNoLookupAndNamesResolveOutsideARuntime) {
  const auto v6 = spool::block_on(spool::net::lookup_host("[::1]:80"));
  ASSERT_EQ(v6.size(), 1u);
  EXPECT_EQ(v6[0], SocketAddr::parse("[::1]:80"));
  const auto local = spool::block_on(spool::net::lookup_host("localhost:6379"));
  ASSERT_FALSE(local.empty());
  EXPECT_EQ(local[0].port(), 6379);
}

TEST(LookupHostAnyExecutor, AnUnknownHostIsASystemErrorNamingIt) {
  try {
    (void)spool::block_on(spool::net::lookup_host("no-such-host.invalid", 80));
    ADD_FAILURE() << "resolved";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().category(), spool::net::resolver_category()) << e.what();
    EXPECT_NE(std::string(e.what()).find("no-such-host.invalid"), std::string::npos);
  }
}

// getaddrinfo and inet_pton would take only what precedes the NUL: "localhost" here.
TEST(LookupHostAnyExecutor, AHostWithANulByteIsRefused) {
  for (const std::string& host :
       {std::string("localhost\0.evil.example", 23), std::string("127.0.0.1\0junk", 14)}) {
    try {
      (void)spool::block_on(spool::net::lookup_host(host, 80));
      ADD_FAILURE() << "resolved a host name with a NUL byte";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("NUL byte"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW((void)spool::net::SocketAddr(std::string_view("127.0.0.1\0junk", 14), 80),
               std::invalid_argument);
}

TEST(LookupHostAnyExecutor, TextWithoutAPortIsRefused) {
  EXPECT_THROW((void)spool::net::lookup_host("localhost"), std::invalid_argument);
  EXPECT_THROW((void)spool::net::lookup_host("localhost:http"), std::invalid_argument);
}

}  // namespace
