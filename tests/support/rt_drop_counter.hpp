// DropCounter: counts how many times an object's destructor ran (runtime tests).
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace spool_rt_test {

/// Increments `count` when destroyed. Move-only: a moved-from DropCounter counts nothing,
/// so passing one by value into a coroutine counts exactly one destruction — when the
/// coroutine frame (holding the parameter) or the local is destroyed.
class DropCounter {
 public:
  explicit DropCounter(std::atomic<std::int64_t>& count) noexcept : count_(&count) {}
  DropCounter(DropCounter&& other) noexcept : count_(std::exchange(other.count_, nullptr)) {}
  DropCounter& operator=(DropCounter&&) = delete;
  DropCounter(const DropCounter&) = delete;
  DropCounter& operator=(const DropCounter&) = delete;
  ~DropCounter() {
    // Seq_cst (the default): a test reads the count after some other synchronisation
    // (a join, a latch, the runtime's destructor); no weaker reasoning is needed here.
    if (count_ != nullptr) count_->fetch_add(1);
  }

 private:
  // The test's counter: ~DropCounter adds to it (seq_cst fetch_add); the test reads it (seq_cst
  // load) after a join, a latch or the runtime's destructor, which puts the add in order before it.
  std::atomic<std::int64_t>* count_;
};

}  // namespace spool_rt_test
