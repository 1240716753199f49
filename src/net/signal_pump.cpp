#include "net/signal_pump.hpp"

#include <unistd.h>

#include "driver/driver.hpp"

namespace spool::detail {

namespace {

long read_op(int fd, void* arg) { return ::read(fd, arg, 64); }

// The pump's waker: asks the thread in `driver` for a pump.
struct PumpRequest {
  std::shared_ptr<Driver> driver;
  void wake() const noexcept { driver->io().request_after_wait_work(); }
};

}  // namespace

SignalPump::SignalPump(const std::shared_ptr<Driver>& driver, int read_fd,
                       std::function<void()> deliver)
    : deliver_(std::move(deliver)),
      reader_(driver, read_fd, "spool::signal"),
      waker_(Waker::from(std::make_shared<PumpRequest>(PumpRequest{driver}))) {
  slot_.install(driver);
  driver->io().set_after_wait_work([this] { pump(); });
  driver->io().request_after_wait_work();
}

void SignalPump::pump() {
  Context cx(waker_, &slot_);
  char buf[64];
  for (;;) {
    // Until pending (the waker is registered for the next edge). A pipe whose write end
    // stays open never reads 0, and read fails only with EAGAIN (handled) or EINTR.
    const Poll<long> r = reader_.poll_io(cx, waiter_, IoSource::Direction::kRead, read_op, buf);
    if (r.is_pending() || r.value() <= 0) break;
  }
  deliver_();
}

}  // namespace spool::detail
