// JoinHandle::detach: the task runs on unobserved, and the handle is empty afterwards.
#include <gtest/gtest.h>

#include <latch>
#include <stdexcept>

#include "spool/spool.hpp"
#include "support/comb_futures.hpp"
#include "support/rt_flavor.hpp"

namespace spool_comb_test {
namespace {

spool::Task<void> count_down_after(ManualLeaf leaf, std::latch* done) {
  co_await leaf;
  done->count_down();
}

class DetachAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(DetachAnyFlavor);

TEST_P(DetachAnyFlavor, TheTaskRunsOnAndTheHandleIsEmpty) {
  auto rt = build();
  ManualLeaf leaf;
  std::latch done(1);
  spool::JoinHandle<void> handle = rt.spawn(count_down_after(leaf, &done));
  ASSERT_NE(handle.id(), 0u);
  handle.detach();
  EXPECT_EQ(handle.id(), 0u);
  EXPECT_TRUE(handle.is_finished());
  handle.abort();  // no effect on an empty handle
  EXPECT_THROW(wait(rt, handle), std::logic_error);
  leaf.fire();
  until_done(rt, done);  // the detached task ran to its end
  EXPECT_TRUE(done.try_wait());
}

}  // namespace
}  // namespace spool_comb_test
