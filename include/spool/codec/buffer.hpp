// spool::codec::Buffer: the bytes a framed reader has read and not yet decoded, or a framed
// writer has encoded and not yet sent.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "spool/config.hpp"

namespace spool::codec {

/// A byte queue that reuses its storage: bytes go in at the back (prepare/commit, or
/// append) and leave at the front (consume). Its storage grows when it must and never
/// shrinks by itself, so a connection in steady state allocates nothing here. Not
/// thread-safe.
class Buffer {
 public:
  /// An empty buffer holding `capacity` bytes of storage.
  explicit Buffer(std::size_t capacity = 0) { reallocate(capacity); }
  /// Takes `other`'s bytes and storage, leaving it empty with none.
  Buffer(Buffer&& other) noexcept
      : data_(std::move(other.data_)),
        capacity_(std::exchange(other.capacity_, 0)),
        begin_(std::exchange(other.begin_, 0)),
        end_(std::exchange(other.end_, 0)) {}
  /// Takes `other`'s bytes and storage, leaving it empty with none.
  Buffer& operator=(Buffer&& other) noexcept {
    data_ = std::move(other.data_);
    capacity_ = std::exchange(other.capacity_, 0);
    begin_ = std::exchange(other.begin_, 0);
    end_ = std::exchange(other.end_, 0);
    return *this;
  }

  /// The bytes held, front first.
  std::string_view view() const noexcept { return {data_.get() + begin_, end_ - begin_}; }
  /// How many bytes it holds.
  std::size_t size() const noexcept { return end_ - begin_; }
  /// Whether it holds none.
  bool empty() const noexcept { return begin_ == end_; }
  /// The bytes of storage it has (held or free).
  std::size_t capacity() const noexcept { return capacity_; }

  /// Drops the first `n` bytes (all of them when n ≥ size()).
  void consume(std::size_t n) noexcept {
    begin_ += std::min(n, size());
    if (begin_ == end_) begin_ = end_ = 0;  // empty: the next bytes go to the front, no move
  }
  /// Drops every byte (keeps the storage).
  void clear() noexcept { begin_ = end_ = 0; }

  /// Free storage of at least `room` bytes after the held ones, for a read or an encoder to
  /// fill (then commit() what was written). Moves the held bytes to the front, or grows the
  /// storage (at least doubling it), only when the free tail is smaller than `room`.
  std::span<char> prepare(std::size_t room) {
    if (capacity_ - end_ < room) make_room(room);
    return {data_.get() + end_, capacity_ - end_};
  }
  /// The first `n` bytes of the last prepare()'s span were written: they are held now.
  void commit(std::size_t n) noexcept { end_ += std::min(n, capacity_ - end_); }
  /// Reallocates the storage to `capacity` bytes (at least size()), the held bytes moved to
  /// its front: to give back the memory of a large frame once it is decoded, or to grow by
  /// a chosen amount.
  void set_capacity(std::size_t capacity) { reallocate(std::max(capacity, size())); }
  /// Copies `bytes` to the back.
  void append(std::string_view bytes) {
    if (bytes.empty()) return;  // no storage may exist: no memcpy to null
    std::memcpy(prepare(bytes.size()).data(), bytes.data(), bytes.size());
    end_ += bytes.size();
  }

 private:
  void make_room(std::size_t room) {
    const std::size_t held = size();
    if (begin_ > 0 && capacity_ - held >= room) {
      std::memmove(data_.get(), data_.get() + begin_, held);
      begin_ = 0;
      end_ = held;
    } else {
      reallocate(std::max(capacity_ * 2, held + room));
    }
  }
  // New storage of `capacity` bytes (none for 0), the held bytes copied to its front.
  void reallocate(std::size_t capacity) {
    std::unique_ptr<char[]> fresh;
    if (capacity > 0) {
      fresh = std::make_unique_for_overwrite<char[]>(capacity);
      if (end_ > begin_) std::memcpy(fresh.get(), data_.get() + begin_, end_ - begin_);
    }
    end_ -= begin_;
    begin_ = 0;
    data_ = std::move(fresh);
    capacity_ = capacity;
  }

  std::unique_ptr<char[]> data_;
  std::size_t capacity_ = 0;
  std::size_t begin_ = 0;  // the first byte held
  std::size_t end_ = 0;    // one past the last byte held
};

}  // namespace spool::codec
