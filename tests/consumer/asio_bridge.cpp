// The consumer's Asio part (tests/consumer/CMakeLists.txt): spool::asio links, with Boost.Asio.
#include "asio_bridge.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>

#include "spool/asio.hpp"

namespace {

spool::Task<bool> wait(boost::asio::steady_timer& timer) {
  co_await timer.async_wait(spool::asio::use_task);
  co_return true;
}

}  // namespace

bool wait_for_an_asio_timer() {
  boost::asio::io_context io;
  boost::asio::steady_timer timer(io, std::chrono::milliseconds(1));
  return spool::asio::drive(io, wait(timer));
}
