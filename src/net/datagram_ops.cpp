// The datagram sockets' send and receive futures.
#include "spool/net/datagram_ops.hpp"

#include <cstring>
#include <string>
#include <system_error>

#include "net/address_name.hpp"
#include "spool/coop.hpp"

namespace spool::detail {

namespace {

struct SendArgs {
  const void* data;
  std::size_t len;
  const sockaddr* to;  // null: the connected peer
  socklen_t to_len;
};

long sendto_op(int fd, void* arg) {
  const auto* a = static_cast<SendArgs*>(arg);
  return ::sendto(fd, a->data, a->len, MSG_NOSIGNAL, a->to, a->to_len);
}

struct RecvArgs {
  void* data;
  std::size_t len;
  sockaddr_storage* from;
  socklen_t* from_len;
};

long recvfrom_op(int fd, void* arg) {
  auto* a = static_cast<RecvArgs*>(arg);
  *a->from_len = sizeof *a->from;
  return ::recvfrom(fd, a->data, a->len, 0, reinterpret_cast<sockaddr*>(a->from), a->from_len);
}

}  // namespace

Poll<std::size_t> poll_recv_from(Context& cx, IoSource& source, IoWaiter& waiter, std::byte* data,
                                 std::size_t len, sockaddr_storage& from, socklen_t& from_len,
                                 const char* what) {
  if (!coop_poll_proceed(cx)) return pending;
  RecvArgs a{data, len, &from, &from_len};
  const Poll<long> r = source.poll_io(cx, waiter, IoSource::Direction::kRead, recvfrom_op, &a);
  if (r.is_pending()) return pending;
  if (r.value() < 0) source.throw_error(static_cast<int>(-r.value()), what);
  return Poll<std::size_t>::ready(static_cast<std::size_t>(r.value()));
}

}  // namespace spool::detail

namespace spool::net {

SendDatagramFuture::SendDatagramFuture(detail::IoSource& source, const std::byte* data,
                                       std::size_t len, const sockaddr* to, socklen_t to_len,
                                       const char* what) noexcept
    : source_(&source), data_(data), len_(len), to_len_(to != nullptr ? to_len : 0), what_(what) {
  if (to_len_ > sizeof to_) to_len_ = sizeof to_;  // (no address is longer)
  if (to != nullptr) std::memcpy(&to_, to, to_len_);
}

Poll<std::size_t> SendDatagramFuture::poll(Context& cx) {
  if (!detail::coop_poll_proceed(cx)) return pending;
  detail::SendArgs a{data_, len_, to_len_ != 0 ? reinterpret_cast<const sockaddr*>(&to_) : nullptr,
                     to_len_};
  const Poll<long> r =
      source_->poll_io(cx, waiter_, detail::IoSource::Direction::kWrite, detail::sendto_op, &a);
  if (r.is_pending()) return pending;
  if (r.value() < 0) {
    const int err = static_cast<int>(-r.value());
    if (to_len_ == 0) source_->throw_error(err, what_);
    throw std::system_error(err, std::generic_category(),
                            std::string(what_) + " " + detail::address_name(to_, to_len_));
  }
  return Poll<std::size_t>::ready(static_cast<std::size_t>(r.value()));
}

}  // namespace spool::net
