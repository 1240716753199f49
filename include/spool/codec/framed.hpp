// spool::codec::FramedRead, FramedWrite and Framed: a byte stream read as a Stream of frames
// and written as a sink of frames, through a codec (spool/codec/codec.hpp).
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <optional>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "spool/codec/buffer.hpp"
#include "spool/codec/codec.hpp"
#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/poll_held.hpp"
#include "spool/io/pending_io.hpp"
#include "spool/stream/stream.hpp"  // spool::next, for the frames

namespace spool::codec {

/// What a framed reader reads from: `r.read(std::span<char>)` is a Future of the count read,
/// 0 at the end of the stream (TcpStream, UnixStream, a read half, a pipe, a BufReader).
/// Cancel-safety rule: a read future dropped while pending must have read nothing (a framed
/// reader drops it on a move). fs::File breaks it (its read goes on in the blocking pool):
/// do not frame one.
template <class R>
concept AsyncByteRead = requires(R& r, std::span<char> buf) {
  { r.read(buf) } -> Future;
  requires std::convertible_to<future_output_t<decltype(r.read(buf))>, std::size_t>;
};

/// What a framed writer writes to: `w.write(std::span<const char>)` is a Future of the count
/// written (TcpStream, UnixStream, a write half, a pipe). Cancel-safety rule: a write future
/// dropped while pending must have written nothing (a move of the framed writer drops a
/// pending flush's write; a feed keeps it). fs::File breaks it (its write goes on in the
/// blocking pool): do not frame one. A socket on io_uring breaks it on a worker (its send
/// may have gone out): do not move a framed writer over one while a flush pends.
template <class W>
concept AsyncByteWrite = requires(W& w, std::span<const char> buf) {
  { w.write(buf) } -> Future;
  requires std::convertible_to<future_output_t<decltype(w.write(buf))>, std::size_t>;
};

namespace detail {

// The free room a read is given at least, and at most asks for (ReadRoom); the storage a
// framed reader or writer takes at its first read or feed (none before: an idle or one-way
// connection holds no buffer it does not use).
inline constexpr std::size_t kReadRoom = 4096;
inline constexpr std::size_t kMaxReadRoom = 65536;
inline constexpr std::size_t kInitialCapacity = 8192;

// How much room a read asks for when the codec does not choose (it has no prepare_read).
// It adapts to the peer, as hyper's adaptive read buffer does: a read that brings at least
// what it asked for doubles the next one's ask, up to kMaxReadRoom, so that a fast peer is
// read in fewer, larger reads (W19: a sixth of the reads, ~10 % of its time); two reads in a
// row that bring less than half of it halve it, down to kReadRoom, and then the storage
// beyond twice the ask is given back once the buffer is empty (never while a frame is
// partly held: a decoder's reservation of a large frame stays until it is decoded, and
// large frames that keep coming keep the reads large, so nothing is given back between them).
class ReadRoom {
 public:
  // The free room of `buf` for the next read: all of its free tail (Buffer::prepare), at
  // least what this read asks for.
  std::span<char> prepare(Buffer& buf) {
    const std::size_t keep = std::max(kInitialCapacity, 2 * wanted_);
    if (shrink_ && buf.empty()) {
      if (buf.capacity() > keep) buf.set_capacity(keep);
      shrink_ = false;
    }
    return buf.prepare(wanted_);
  }
  // The read into the last prepare()'s room brought `n` bytes.
  void record(std::size_t n) noexcept {
    if (n >= wanted_) {
      wanted_ = std::min(2 * wanted_, kMaxReadRoom);
      short_reads_ = 0;
    } else if (2 * n >= wanted_) {
      short_reads_ = 0;
    } else if (++short_reads_ == 2) {
      wanted_ = std::max(wanted_ / 2, kReadRoom);
      short_reads_ = 0;
      shrink_ = true;
    }
  }

 private:
  std::size_t wanted_ = kReadRoom;  // what the next read asks prepare for
  unsigned char short_reads_ = 0;   // reads in a row that brought less than half of it
  bool shrink_ = false;             // the ask was halved: give storage back when empty
};

// The read side: the bytes read and not yet decoded, and the read under way. A pending
// read is kept across polls (dropping the poll that started it loses nothing); a move drops
// it in the moved-from object, which is how a pending leaf may be moved (it has read
// nothing yet).
template <class R>
class FrameReader {
 public:
  FrameReader() = default;
  FrameReader(FrameReader&& other) noexcept
      : buf_(std::move(other.buf_)), room_(other.room_), phase_(other.phase_) {
    other.read_.reset();  // it points into the storage this object now owns
  }
  FrameReader& operator=(FrameReader&& other) noexcept {
    read_.reset();
    other.read_.reset();
    buf_ = std::move(other.buf_);
    room_ = other.room_;
    phase_ = other.phase_;
    return *this;
  }

  template <Decoder C>
  Poll<std::optional<frame_t<C>>> poll_next(R& io, C& codec, Context& cx) {
    using Out = Poll<std::optional<frame_t<C>>>;
    for (;;) {
      if (phase_ == Phase::kDone) return Out(std::nullopt);
      if (phase_ == Phase::kEof) {
        auto frame = decode_eof(codec, buf_);
        if (!frame) phase_ = Phase::kDone;
        return Out(std::move(frame));
      }
      if (!read_) {
        if (auto frame = codec.decode(buf_)) return Out(std::move(frame));
        read_.emplace(io.read(read_room(codec)));
      }
      auto p = spool::detail::poll_held(read_, cx);  // (a failed one: the next poll reads afresh)
      if (p.is_pending()) return spool::pending;
      const std::size_t n = std::move(p).value();
      if (n == 0) {
        phase_ = Phase::kEof;
      } else {
        buf_.commit(n);
        if constexpr (!kCodecSizesReads<C>) room_.record(n);
      }
    }
  }
  template <Decoder C>
  std::optional<frame_t<C>> try_next(C& codec) {
    if (phase_ != Phase::kReading || read_) return std::nullopt;  // a pending read owns the room
    return codec.decode(buf_);
  }
  Buffer& buffer() noexcept { return buf_; }
  // Drops the pending read (it had read nothing).
  void drop_pending() noexcept { read_.reset(); }

 private:
  // Whether codec C chooses the room of each read (its prepare_read).
  template <class C>
  static constexpr bool kCodecSizesReads = requires(C& codec, Buffer& buf) {
    { codec.prepare_read(buf) } -> std::same_as<std::span<char>>;
  };
  template <Decoder C>
  std::span<char> read_room(C& codec) {
    if (buf_.capacity() == 0) buf_.set_capacity(kInitialCapacity);  // the first read
    if constexpr (kCodecSizesReads<C>) {
      const std::span<char> room = codec.prepare_read(buf_);
      if (room.empty()) {
        throw std::logic_error("spool::codec: the codec's prepare_read gave no room to read into");
      }
      return room;
    } else {
      return room_.prepare(buf_);
    }
  }
  enum class Phase : unsigned char { kReading, kEof, kDone };
  using ReadFuture = decltype(std::declval<R&>().read(std::declval<std::span<char>>()));

  Buffer buf_;
  std::optional<ReadFuture> read_;  // points into buf_'s free room while engaged
  ReadRoom room_;
  Phase phase_ = Phase::kReading;
};

// Whether byte stream W has a flush() of its own (TlsStream: a write may return before its
// bytes reached the transport).
template <class W>
concept StreamFlushes = requires(W& w) {
  { w.flush() } -> Future;
};

// The write side: the frames encoded and not yet written, the write under way, and then the
// stream's own flush (W's, if it has one). Both are kept while a flush waits and dropped by
// a move (which holds the framed type's rule: a pending write has written nothing); a dropped Flush
// drops only the stream flush, which sends nothing of ours. A feed while a write pends encodes into
// staged_, not buf_ (which the write points into), and keeps the write: a socket's send on a
// worker's io_uring may have gone out already when its future is dropped (docs/io.md), so dropping
// it there and writing buf_ again would send its bytes twice.
template <class W>
class FrameWriter {
 public:
  FrameWriter() = default;
  FrameWriter(FrameWriter&& other) noexcept
      : buf_(std::move(other.buf_)), staged_(std::move(other.staged_)) {
    other.drop_pending();  // its write points into the storage this object now owns
  }
  FrameWriter& operator=(FrameWriter&& other) noexcept {
    drop_pending();
    other.drop_pending();
    buf_ = std::move(other.buf_);
    staged_ = std::move(other.staged_);
    return *this;
  }

  template <class C, class Item>
  void feed(C& codec, const Item& item) {
    drop_pending_stream_flush();  // (it sends nothing of ours; the next flush asks again)
    if (write_) {
      codec.encode(item, staged_);  // behind the pending write, which points into buf_
      return;
    }
    unstage();
    if (buf_.capacity() == 0) buf_.set_capacity(kInitialCapacity);
    codec.encode(item, buf_);
  }
  Poll<void> poll_flush(W& io, Context& cx) {
    for (;;) {
      if (!write_) unstage();
      if (buf_.empty()) break;
      if (!write_) write_.emplace(io.write(std::span<const char>(buf_.view())));
      auto p = spool::detail::poll_held(write_, cx);
      if (p.is_pending()) return spool::pending;
      const std::size_t n = std::move(p).value();
      if (n == 0) {
        throw std::runtime_error(
            "spool::codec: the stream's write accepted no bytes (a write of 0 would loop)");
      }
      buf_.consume(n);
    }
    if constexpr (StreamFlushes<W>) {
      if (!flush_) flush_.emplace(io.flush());
      try {
        if (flush_->poll(cx).is_pending()) return spool::pending;
      } catch (...) {
        flush_.reset();
        throw;
      }
      flush_.reset();
    }
    return Poll<void>::ready();
  }
  // The bytes encoded and not yet written (those fed while a write pends join them once it
  // is answered).
  Buffer& buffer() noexcept { return buf_; }
  // Drops the pending write and stream flush (see the class comment).
  void drop_pending() noexcept {
    write_.reset();
    drop_pending_stream_flush();
  }
  // Drops the pending stream flush only (a dropped Flush).
  void drop_pending_stream_flush() noexcept {
    if constexpr (StreamFlushes<W>) flush_.reset();
  }

 private:
  using WriteFuture = decltype(std::declval<W&>().write(std::declval<std::span<const char>>()));
  template <class T, bool = StreamFlushes<T>>
  struct FlushSlot {
    struct type {};  // W has no flush of its own
  };
  template <class T>
  struct FlushSlot<T, true> {
    using type = std::optional<decltype(std::declval<T&>().flush())>;
  };
  using StreamFlush = typename FlushSlot<W>::type;

  // Moves the bytes fed while a write pended behind buf_'s (no write pends now).
  void unstage() {
    if (staged_.empty()) return;
    buf_.append(staged_.view());
    staged_.clear();
  }

  Buffer buf_;
  Buffer staged_;                     // fed while write_ pended: buf_'s next bytes
  std::optional<WriteFuture> write_;  // points into buf_'s front while engaged
  [[no_unique_address]] StreamFlush flush_;
};

}  // namespace detail

/// The future of a framed writer's flush() or send(): ready once every frame encoded so far
/// is written and, for a stream with a flush() of its own (TlsStream), flushed. It borrows
/// the framed writer and must not outlive it. Dropping it while pending loses nothing: the
/// frames stay buffered for the next flush, and the stream's own flush is let go (a
/// TlsStream's shutdown may follow).
template <class Writer>
class [[nodiscard]] Flush {
 public:
  /// Flushes `writer` (made by its flush() or send()).
  explicit Flush(Writer& writer) noexcept : writer_(&writer) {}
  /// Takes over `other`'s flush.
  Flush(Flush&& other) noexcept
      : writer_(std::exchange(other.writer_, nullptr)), polled_(other.polled_) {}
  Flush& operator=(Flush&&) = delete;
  /// Lets go of the stream's own flush, if this one waits in it (it sends nothing of ours,
  /// and a TlsStream's holds its writing side). A pending write stays for the next flush:
  /// a stream's write that goes on after a drop (io::stdout() on a file) writes its bytes
  /// once.
  ~Flush() {
    if (writer_ != nullptr && polled_) writer_->drop_pending_stream_flush();
  }
  /// Writes what is buffered: ready when all of it is written; throws the stream's error.
  Poll<void> poll(Context& cx) {
    polled_ = true;
    return writer_->poll_flush(cx);
  }

 private:
  Writer* writer_;
  bool polled_ = false;
};

namespace detail {

// What every framed type `Self` owns: its byte stream and its codec. The first base class,
// so that it is destroyed last, after the pending read or write (in the bases below) that
// points into the stream; for the same reason its move assignment drops both sides'
// pending read and write before it replaces the stream (a TlsStream's frees the connection
// they hold).
template <class Self, class S, class C>
class FramedParts {
  static_assert(!PendingIoOutlivesDrop<S>,
                "spool::codec: this byte stream (fs::File, or one over it) cannot be framed: "
                "its dropped pending read or write still completes, so a framed move or feed "
                "would lose or repeat bytes. Read the file whole (spool::fs::read) and decode "
                "the buffer.");

 public:
  FramedParts(S io, C codec) : io_(std::move(io)), codec_(std::move(codec)) {}
  FramedParts(FramedParts&&) noexcept(
      std::is_nothrow_move_constructible_v<S>&& std::is_nothrow_move_constructible_v<C>) = default;
  FramedParts& operator=(FramedParts&& other) noexcept(
      std::is_nothrow_move_assignable_v<S>&& std::is_nothrow_move_assignable_v<C>) {
    static_cast<Self&>(*this).drop_pending_io();
    static_cast<Self&>(other).drop_pending_io();
    io_ = std::move(other.io_);
    codec_ = std::move(other.codec_);
    return *this;
  }
  /// The byte stream (use it directly only with nothing buffered: reading would skip the
  /// buffered bytes, writing would overtake them).
  S& get() noexcept { return io_; }
  /// The codec.
  C& codec() noexcept { return codec_; }

 private:
  S io_;
  C codec_;
};

// The read members of FramedRead and Framed (`Self` derives from FramedParts<S, C>).
template <class Self, class S, class C>
class FramedSource {
 public:
  /// The next frame, nullopt at the end of the stream (the Stream concept; see FramedRead).
  Poll<std::optional<frame_t<C>>> poll_next(Context& cx) {
    Self& self = static_cast<Self&>(*this);
    return reader_.poll_next(self.get(), self.codec(), cx);
  }
  /// The next frame if the bytes buffered hold one, with no I/O (nullopt otherwise, and
  /// while a read is pending or after the end): to handle every frame a read brought before
  /// doing anything else, as a server does before writing its replies. Throws the codec's
  /// errors, as poll_next does.
  std::optional<frame_t<C>> try_next() {
    return reader_.try_next(static_cast<Self&>(*this).codec());
  }
  /// The bytes read and not yet decoded.
  Buffer& read_buffer() noexcept { return reader_.buffer(); }

 protected:
  void drop_pending_read() noexcept { reader_.drop_pending(); }

 private:
  FrameReader<S> reader_;
};

// The write members of FramedWrite and Framed (`Self` derives from FramedParts<S, C>).
template <class Self, class S, class C>
class FramedSink {
 public:
  /// Encodes `item` into the write buffer (no I/O; throws the codec's error, buffering
  /// nothing). The buffer grows until flushed: flush every so many frames.
  template <class Item>
  requires Encoder<C, Item>
  void feed(const Item& item) { writer_.feed(static_cast<Self&>(*this).codec(), item); }
  /// Writes every frame fed so far (see Flush).
  Flush<Self> flush() noexcept { return Flush<Self>(static_cast<Self&>(*this)); }
  /// feed(item), then flush(): the item is encoded now, when send is called.
  template <class Item>
  requires Encoder<C, Item> Flush<Self> send(const Item& item) {
    feed(item);
    return flush();
  }
  /// Flush's poll.
  Poll<void> poll_flush(Context& cx) {
    return writer_.poll_flush(static_cast<Self&>(*this).get(), cx);
  }
  /// The bytes encoded and not yet written, except those fed while a flush's write pends
  /// (they join these once it is answered).
  Buffer& write_buffer() noexcept { return writer_.buffer(); }

 protected:
  friend class Flush<Self>;
  void drop_pending_write() noexcept { writer_.drop_pending(); }
  void drop_pending_stream_flush() noexcept { writer_.drop_pending_stream_flush(); }

 private:
  FrameWriter<S> writer_;
};

}  // namespace detail

/// A byte stream `R` read as a Stream of the frames codec `C` decodes (docs/codec.md):
/// `while (auto line = co_await spool::next(reader)) ...`. Owns `R` and `C` (get(),
/// codec()). The frames of one read come out without another; a frame spread over many
/// reads is decoded once it is whole. A codec's error comes out of the poll (co_await) that
/// decoded it; whether the next poll goes on is the codec's (spool's codecs go on after
/// FrameTooLong). After the end of the stream it gives nullopt again. One task reads it at a
/// time; it may be moved, between polls or while one is pending (the pending read is
/// dropped: it had read nothing).
template <AsyncByteRead R, Decoder C>
class FramedRead : public detail::FramedParts<FramedRead<R, C>, R, C>,
                   public detail::FramedSource<FramedRead<R, C>, R, C> {
 public:
  /// Reads frames of `codec` from `io`.
  FramedRead(R io, C codec)
      : detail::FramedParts<FramedRead, R, C>(std::move(io), std::move(codec)) {}

 private:
  friend class detail::FramedParts<FramedRead, R, C>;
  void drop_pending_io() noexcept { this->drop_pending_read(); }
};

/// A byte stream `W` written as a sink of frames of codec `C`: feed() encodes into a buffer,
/// flush() writes the buffer out, send() does both. Owns `W` and `C` (get(), codec()). One
/// task writes at a time. Destroying it does not flush: co_await flush() first.
template <AsyncByteWrite W, class C>
class FramedWrite : public detail::FramedParts<FramedWrite<W, C>, W, C>,
                    public detail::FramedSink<FramedWrite<W, C>, W, C> {
 public:
  /// Writes frames of `codec` to `io`.
  FramedWrite(W io, C codec)
      : detail::FramedParts<FramedWrite, W, C>(std::move(io), std::move(codec)) {}

 private:
  friend class detail::FramedParts<FramedWrite, W, C>;
  void drop_pending_io() noexcept { this->drop_pending_write(); }
};

/// A byte stream `S` both read as a Stream of frames and written as a sink of frames, one
/// codec doing both: FramedRead's and FramedWrite's members together. A read and a flush may
/// be pending at once (in one select), or split the stream first and frame each half.
template <class S, class C>
requires AsyncByteRead<S> && AsyncByteWrite<S> && Decoder<C>
class Framed : public detail::FramedParts<Framed<S, C>, S, C>,
               public detail::FramedSource<Framed<S, C>, S, C>,
               public detail::FramedSink<Framed<S, C>, S, C> {
 public:
  /// Reads and writes frames of `codec` on `io`.
  Framed(S io, C codec) : detail::FramedParts<Framed, S, C>(std::move(io), std::move(codec)) {}

 private:
  friend class detail::FramedParts<Framed, S, C>;
  void drop_pending_io() noexcept {
    this->drop_pending_read();
    this->drop_pending_write();
  }
};

}  // namespace spool::codec
