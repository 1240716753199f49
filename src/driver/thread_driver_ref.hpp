// ThreadDriverRef: a worker's own count of the references that its timers hold to the
// runtime's driver.
#pragma once

#include <memory>

#include "context/thread_local_scope.hpp"

namespace spool::detail {

class Driver;

// Every Sleep holds a std::shared_ptr<Driver>, since it may outlive its runtime
// (docs/time.md). Copied from the runtime's, each Sleep made and dropped would update the
// one count that all workers share, and that cache line would move between cores at every
// timer. Within the scope of a ThreadDriverRef, a timer made on this thread copies instead
// a pointer to the same driver whose count is a control block of this thread's own. That
// block holds one reference to the driver until the scope and every timer made in it are
// gone. Not copyable or movable: the thread points at it.
class ThreadDriverRef {
 public:
  explicit ThreadDriverRef(const std::shared_ptr<Driver>& driver);

  // What a timer made on this thread for `driver` keeps: this thread's own reference to
  // `driver` if it has one, else `driver`.
  static const std::shared_ptr<Driver>& for_timer(const std::shared_ptr<Driver>& driver) noexcept;

 private:
  std::shared_ptr<Driver> ref_;
  ThreadLocalScope<const std::shared_ptr<Driver>*> scope_;  // the thread points at ref_
};

}  // namespace spool::detail
