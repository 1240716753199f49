// ScriptedBytes: an in-memory byte stream for the codec tests. Its reads give a fixed input
// cut at chosen offsets (a read never crosses a cut, so a test decides how frames split
// across reads), each read pending once first when asked; its writes accept at most so many
// bytes each and collect them; it counts the ops waiting (pended, not yet completed).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"

namespace spool_test {

class ScriptedBytes {
 public:
  // Reads give `input`, never across an offset of `cuts`.
  explicit ScriptedBytes(std::string input, std::set<std::size_t> cuts = {})
      : input_(std::move(input)), cuts_(std::move(cuts)) {}

  // The future of read(buf) or write(buf): pending once first when the stream says so
  // (waking its waker at once, as data that arrives at once would), then ready.
  template <class Op>
  class Io {
   public:
    Io(ScriptedBytes& s, Op op) : s_(&s), op_(std::move(op)) {}
    Io(Io&& other) noexcept
        : s_(other.s_),
          op_(std::move(other.op_)),
          pended_(other.pended_),
          waiting_(std::move(other.waiting_)) {}
    Io& operator=(Io&&) = delete;
    ~Io() { stop_waiting(); }
    spool::Poll<std::size_t> poll(spool::Context& cx) {
      if (s_->pend_each_ && !pended_) {
        pended_ = true;
        waiting_ = s_->waiting_;
        ++*waiting_;
        cx.waker().wake_by_ref();
        return spool::pending;
      }
      stop_waiting();
      return op_(*s_);
    }

   private:
    void stop_waiting() {
      if (waiting_) --*std::exchange(waiting_, nullptr);
    }

    ScriptedBytes* s_;
    Op op_;
    bool pended_ = false;
    std::shared_ptr<int> waiting_;  // the stream's count, while this op waits (pended)
  };

  auto read(std::span<char> buf) {
    auto op = [buf](ScriptedBytes& s) -> spool::Poll<std::size_t> {
      if (s.fail_next_read_) {
        s.fail_next_read_ = false;
        throw std::runtime_error("scripted read failure");
      }
      const auto cut = s.cuts_.upper_bound(s.pos_);
      const std::size_t stop =
          cut == s.cuts_.end() ? s.input_.size() : std::min(*cut, s.input_.size());
      const std::size_t n = std::min(buf.size(), stop - s.pos_);
      std::memcpy(buf.data(), s.input_.data() + s.pos_, n);
      s.pos_ += n;
      ++s.reads_;
      return spool::Poll<std::size_t>::ready(n);
    };
    return Io<decltype(op)>(*this, std::move(op));
  }
  auto write(std::span<const char> buf) {
    auto op = [buf](ScriptedBytes& s) -> spool::Poll<std::size_t> {
      const std::size_t n = std::min(buf.size(), s.write_limit_);
      s.written_.append(buf.data(), n);
      return spool::Poll<std::size_t>::ready(n);
    };
    return Io<decltype(op)>(*this, std::move(op));
  }

  // Each read and write is pending once before it is ready.
  void pend_each(bool on) { pend_each_ = on; }
  // A write accepts at most `n` bytes (0: a broken stream).
  void write_limit(std::size_t n) { write_limit_ = n; }
  // The next read throws std::runtime_error.
  void fail_next_read() { fail_next_read_ = true; }
  // What was written.
  const std::string& written() const { return written_; }
  // Reads that completed (the end of the stream included).
  int reads() const { return reads_; }
  // The count of ops that pended and were neither completed nor destroyed (a stream's waiter
  // places); it stays valid when the stream moves.
  std::shared_ptr<const int> waiting() const { return waiting_; }

 private:
  std::string input_;
  std::set<std::size_t> cuts_;
  std::size_t pos_ = 0;
  std::string written_;
  std::size_t write_limit_ = static_cast<std::size_t>(-1);
  bool pend_each_ = false;
  bool fail_next_read_ = false;
  int reads_ = 0;
  std::shared_ptr<int> waiting_ = std::make_shared<int>(0);
};

}  // namespace spool_test
