// Builder::thread_name names every runtime thread (as top -H, ps -L and gdb show it).
#include <gtest/gtest.h>
#include <pthread.h>

#include <string>

#include "spool/spool.hpp"

namespace {

using spool::Builder;
using spool::Task;

std::string this_thread_name() {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

Task<std::string> name_of_worker() { co_return this_thread_name(); }

TEST(ThreadName, WorkersAndBlockingThreadsCarryTheConfiguredName) {
  auto rt = Builder::multi_thread().worker_threads(1).thread_name("spool-test-pool").build();
  EXPECT_EQ(rt.block_on(rt.spawn(name_of_worker())), "spool-test-pool");
  EXPECT_EQ(rt.block_on(rt.spawn_blocking([] { return this_thread_name(); })), "spool-test-pool");
}

TEST(ThreadName, TheDefaultNameSaysSpoolAndLongNamesAreCutTo15Bytes) {
  auto plain = Builder::multi_thread().worker_threads(1).build();
  EXPECT_EQ(plain.block_on(plain.spawn(name_of_worker())), "spool-worker");
  auto named =
      Builder::multi_thread().worker_threads(1).thread_name("a-very-long-thread-name").build();
  EXPECT_EQ(named.block_on(named.spawn(name_of_worker())), "a-very-long-thr");
}

}  // namespace
