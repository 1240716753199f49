// spool::tls::detail::Connection<S>: one TLS connection's state, shared by its stream and
// halves: the Engine, the transport S, and the transport read and write in flight.
#pragma once

#include <concepts>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/waker.hpp"
#include "spool/detail/spin_lock.hpp"
#include "spool/tls/engine.hpp"

namespace spool::tls {

/// A byte stream TLS can run over: read(span of bytes) and write(span of const bytes) give
/// futures of the byte count, as TcpStream, UnixStream and spool::io::Duplex (two pipe ends)
/// do. A read ready with 0 is the end of the stream.
template <class S>
concept ByteStream = requires(S& s, std::span<std::byte> in, std::span<const std::byte> out) {
  requires Future<decltype(s.read(in))>;
  requires Future<decltype(s.write(out))>;
  requires std::convertible_to<future_output_t<decltype(s.read(in))>, std::size_t>;
  requires std::convertible_to<future_output_t<decltype(s.write(out))>, std::size_t>;
};

namespace detail {

/// Which side of a connection waits.
enum class Side { kReader, kWriter };

/// The wakers of the two sides of a connection. The transport write is shared (a read can
/// produce ciphertext too: an alert, a key update), so whoever polls it registers this
/// fan-out, which wakes both sides: a spurious wake costs one poll, a lost one a hang.
class SideWakers {
 public:
  /// Records `w` as `side`'s waker (cheap when it is the one recorded).
  void set(Side side, const Waker& w) {
    std::lock_guard guard(lock_);
    (side == Side::kReader ? reader_ : writer_) = w;
  }
  /// Wakes the writer's side.
  void wake_writer() {
    Waker writer;
    {
      std::lock_guard guard(lock_);
      writer = writer_;
    }
    writer.wake_by_ref();
  }
  /// Wakes both sides.
  void wake() {
    Waker reader, writer;
    {
      std::lock_guard guard(lock_);
      reader = reader_;
      writer = writer_;
    }
    reader.wake_by_ref();
    writer.wake_by_ref();
  }

 private:
  spool::detail::SpinLock lock_;  // guards both wakers (held for a copy, never across a wake)
  Waker reader_;
  Waker writer_;
};

/// One connection: what the handshake, the stream and both halves share. Every member is
/// used under `mu` once the stream exists (its halves may run on two threads at once).
template <ByteStream S>
class Connection {
 public:
  /// A connection of `ctx`'s role over `transport` (see Engine for `server_name`).
  Connection(const TlsContext& ctx, const std::string& server_name, S transport)
      : engine(ctx, server_name),
        transport(std::move(transport)),
        wakers_(std::make_shared<SideWakers>()),
        fan_out_(Waker::from(wakers_)) {}

  /// Sends the engine's output until none is left: true; false when the transport cannot
  /// take more now (`side`'s waker is woken when it can). Transport errors propagate, also
  /// one that flush_quietly met earlier.
  bool poll_flush(Context& cx, Side side) {
    if (write_error_) std::rethrow_exception(write_error_);
    for (;;) {
      if (!writing_) {
        const std::span<const std::byte> out = engine.output();
        if (out.empty()) return true;
        writing_.emplace(transport.write(out));
      }
      wakers_->set(side, cx.waker());  // before the poll: a wake may follow at once
      Context fan_cx(fan_out_, cx);
      Poll<std::size_t> sent = poll_then_reset(writing_, fan_cx);
      if (sent.is_pending()) return false;
      // The write the other side may be waiting for is over, and the transport's wake of
      // fan_out_ may have gone with it (a ring operation's waiter is taken by whoever sees it
      // done): the writer is woken here when the reader finished its write.
      if (side == Side::kReader) wakers_->wake_writer();
      engine.output_sent(sent.value());
    }
  }

  /// poll_flush for a side whose own result must stand (a read that already took plaintext
  /// out of OpenSSL, a failed handshake's alert): a transport error is kept for the next
  /// poll_flush to throw instead of being thrown here, and nothing is sent after it.
  void flush_quietly(Context& cx, Side side) noexcept {
    if (write_error_) return;
    try {
      (void)poll_flush(cx, side);
    } catch (...) {
      write_error_ = std::current_exception();
    }
  }

  /// Reads the transport into the engine: true once bytes (or the end) arrived; false while
  /// none can (`cx`'s waker is woken when some can). Only one side reads the transport at a
  /// time (the handshake, then the reader), so it waits with its own waker.
  bool poll_fill(Context& cx) {
    if (!reading_) reading_.emplace(transport.read(engine.input_space()));
    Poll<std::size_t> got = poll_then_reset(reading_, cx);
    if (got.is_pending()) return false;
    engine.input_received(got.value());
    return true;
  }

  /// Records `op` as `side`'s operation in progress, for the length of a poll and for as
  /// long as it is pending (a side has one waker: a second waiting task would never be
  /// woken). Throws std::logic_error when another operation holds the side.
  void claim(Side side, const void* op) {
    const void*& holder = holders_[side == Side::kReader ? 0 : 1];
    if (holder != nullptr && holder != op) {
      throw std::logic_error(
          side == Side::kReader
              ? "spool::tls::TlsStream: a read while another read of the stream is pending; "
                "TLS streams allow one reader and one writer at a time: await (or drop) the "
                "first read before the next"
              : "spool::tls::TlsStream: a write or shutdown while another write or shutdown "
                "of the stream is pending; TLS streams allow one reader and one writer at a "
                "time: await (or drop) the first before the next");
    }
    holder = op;
  }
  /// `op` no longer holds `side` (nothing when it does not).
  void release(Side side, const void* op) noexcept {
    const void*& holder = holders_[side == Side::kReader ? 0 : 1];
    if (holder == op) holder = nullptr;
  }

  /// The Engine (under `mu`).
  Engine engine;
  /// The transport (under `mu` while the stream exists).
  S transport;
  /// Held by each poll of the stream or a half (never across a suspension).
  std::mutex mu;

 private:
  using ReadOp = decltype(std::declval<S&>().read(std::declval<std::span<std::byte>>()));
  using WriteOp = decltype(std::declval<S&>().write(std::declval<std::span<const std::byte>>()));

  // Polls `op` (constructed in place: a polled future never moves); ready or throwing, it
  // is destroyed, so the next operation starts a new one.
  template <class Op>
  static Poll<std::size_t> poll_then_reset(std::optional<Op>& op, Context& cx) {
    try {
      auto p = op->poll(cx);
      if (p.is_pending()) return pending;
      op.reset();
      return Poll<std::size_t>::ready(static_cast<std::size_t>(p.value()));
    } catch (...) {
      op.reset();
      throw;
    }
  }

  std::optional<ReadOp> reading_;   // the transport read in flight, into engine.input_space()
  std::optional<WriteOp> writing_;  // the transport write in flight, of engine.output()
  std::exception_ptr write_error_;  // the transport write's failure met by flush_quietly
  const void* holders_[2] = {};     // the reader's and the writer's operation (claim)
  std::shared_ptr<SideWakers> wakers_;
  Waker fan_out_;  // wakes wakers_ (the waker the transport write waits with)
};

}  // namespace detail

}  // namespace spool::tls
