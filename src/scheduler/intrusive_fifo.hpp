// An intrusive FIFO, linked through a member of its items (`Next`): pushing never allocates, so
// schedule() can be noexcept. Not synchronised: its owner guards it (the inject queue's lock, or
// the one thread that drives a current-thread runtime).
#pragma once

#include <cstddef>

namespace spool::detail {

template <class T, T* T::*Next>
class IntrusiveFifo {
 public:
  void push_back(T* t) noexcept {
    t->*Next = nullptr;
    if (tail_) {
      tail_->*Next = t;
    } else {
      head_ = t;
    }
    tail_ = t;
    ++len_;
  }
  T* pop_front() noexcept {
    T* t = head_;
    if (!t) return nullptr;
    head_ = t->*Next;
    if (!head_) tail_ = nullptr;
    t->*Next = nullptr;
    --len_;
    return t;
  }
  bool empty() const noexcept { return head_ == nullptr; }
  std::size_t len() const noexcept { return len_; }

 private:
  T* head_ = nullptr;
  T* tail_ = nullptr;
  std::size_t len_ = 0;
};

}  // namespace spool::detail
