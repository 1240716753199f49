// An intrusive FIFO of tasks, linked through TaskHeader::queue_next: pushing never
// allocates, so schedule() can be noexcept. Not synchronised: its owner guards it (the inject
// queue's mutex, or the one thread that drives a current-thread runtime).
#pragma once

#include <cstddef>

#include "task/header.hpp"

namespace spool::detail {

class TaskFifo {
 public:
  void push_back(TaskHeader* t) noexcept {
    t->queue_next = nullptr;
    if (tail_) {
      tail_->queue_next = t;
    } else {
      head_ = t;
    }
    tail_ = t;
    ++len_;
  }
  TaskHeader* pop_front() noexcept {
    TaskHeader* t = head_;
    if (!t) return nullptr;
    head_ = t->queue_next;
    if (!head_) tail_ = nullptr;
    t->queue_next = nullptr;
    --len_;
    return t;
  }
  bool empty() const noexcept { return head_ == nullptr; }
  std::size_t len() const noexcept { return len_; }

 private:
  TaskHeader* head_ = nullptr;
  TaskHeader* tail_ = nullptr;
  std::size_t len_ = 0;
};

}  // namespace spool::detail
