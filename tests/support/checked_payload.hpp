// CheckedPayload: a stress-test message that counts its live instances and carries a
// checksum, so a value destroyed twice or leaked (the count), or a moved-from value handed
// out as if it still held its message (the checksum), is detected.
#pragma once

#include <atomic>
#include <cstdint>

namespace spool_test {

class CheckedPayload {
 public:
  // Counts itself in `live` (incremented here and by every copy and move, decremented by
  // every destructor: 0 once every instance is gone).
  CheckedPayload(std::atomic<std::int64_t>& live, std::uint64_t value) noexcept
      : live_(&live), value_(value), check_(checksum(value)) {
    count(1);
  }
  CheckedPayload(const CheckedPayload& o) noexcept
      : live_(o.live_), value_(o.value_), check_(o.check_) {
    count(1);
  }
  // The source keeps counting as live until destroyed, but no longer holds a message: its
  // checksum is broken (checksum(0) != 0).
  CheckedPayload(CheckedPayload&& o) noexcept : live_(o.live_), value_(o.value_), check_(o.check_) {
    o.value_ = 0;
    o.check_ = 0;
    count(1);
  }
  CheckedPayload& operator=(const CheckedPayload&) = delete;
  CheckedPayload& operator=(CheckedPayload&&) = delete;
  ~CheckedPayload() { count(-1); }

  std::uint64_t value() const noexcept { return value_; }
  // False for a moved-from instance.
  bool intact() const noexcept { return check_ == checksum(value_); }

 private:
  static constexpr std::uint64_t checksum(std::uint64_t v) noexcept {
    return (v * 0x9e3779b97f4a7c15u) ^ 0x5bd1e9955bd1e995u;
  }
  void count(std::int64_t d) noexcept {
    // Relaxed RMWs (any thread): the test reads the total only after a join, a JoinHandle
    // or the runtime's destructor, which orders every add and subtract before its load.
    live_->fetch_add(d, std::memory_order_relaxed);
  }

  std::atomic<std::int64_t>* live_;  // the test's counter; see count()
  std::uint64_t value_;
  std::uint64_t check_;
};

}  // namespace spool_test
