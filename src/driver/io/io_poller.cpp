// What the two pollers share: the readiness bits of an event mask, the wake eventfd.
#include "driver/io/io_poller.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace spool::detail {

void throw_errno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

std::uint32_t readiness_of(std::uint32_t events) noexcept {
  std::uint32_t bits = 0;
  if ((events & POLLIN) != 0) bits |= ScheduledIo::kReadable;
  if ((events & POLLOUT) != 0) bits |= ScheduledIo::kWritable;
  if ((events & POLLRDHUP) != 0) bits |= ScheduledIo::kReadable | ScheduledIo::kReadClosed;
  if ((events & POLLHUP) != 0) {
    bits |= ScheduledIo::kReadable | ScheduledIo::kReadClosed | ScheduledIo::kWritable |
            ScheduledIo::kWriteClosed;
  }
  // The syscall reports the error itself: wake both directions to make it.
  if ((events & POLLERR) != 0) {
    bits |= ScheduledIo::kReadable | ScheduledIo::kWritable | ScheduledIo::kError;
  }
  return bits;
}

WakeEvent::WakeEvent() : fd_(::eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (fd_ < 0) throw_errno(errno, "spool: eventfd for the I/O driver");
}

WakeEvent::~WakeEvent() { ::close(fd_); }

void WakeEvent::signal() noexcept {
  const std::uint64_t one = 1;
  // EAGAIN only when the counter is about to overflow: it is readable then anyway.
  [[maybe_unused]] const ssize_t r = ::write(fd_, &one, sizeof one);
}

void WakeEvent::drain() noexcept {
  std::uint64_t value;
  [[maybe_unused]] const ssize_t r = ::read(fd_, &value, sizeof value);
}

}  // namespace spool::detail
