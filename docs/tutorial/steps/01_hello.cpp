// Step 1: a Task, co_await, and spool::block_on.
#include <cstdio>
#include <string>
#include <utility>

#include "spool/spool.hpp"

// A future is any type with `spool::Poll<T> poll(spool::Context&)`: it returns the value
// when it is ready, or spool::pending after arranging to be woken when it may be.
// This one is pending `n` times, then ready with the number of polls it took.
class CountDown {
 public:
  explicit CountDown(int n) : left_(n) {}

  spool::Poll<int> poll(spool::Context& cx) {
    ++polls_;
    if (left_ == 0) return polls_;
    --left_;
    // A real future (a timer, a socket) keeps cx.waker() and wakes it when its event
    // comes. This one has no event to wait for, so it asks to be polled again at once.
    cx.waker().wake_by_ref();
    return spool::pending;
  }

 private:
  int left_;
  int polls_ = 0;
};

// A coroutine that returns spool::Task<T> is a future too: it runs when it is polled.
spool::Task<std::string> greeting(std::string name) { co_return "hello, " + name; }

spool::Task<int> hello() {
  std::string text = co_await greeting("world");  // runs greeting to its end
  std::printf("%s\n", text.c_str());
  int polls = co_await CountDown(3);  // suspends hello until CountDown is ready
  std::printf("CountDown was ready at poll %d\n", polls);
  co_return 42;
}

int main() {
  spool::Task<int> task = hello();  // nothing runs yet: a Task is lazy
  std::printf("made the task; nothing has run yet\n");
  int answer = spool::block_on(std::move(task));  // polls it on this thread until ready
  std::printf("hello() returned %d\n", answer);
}
