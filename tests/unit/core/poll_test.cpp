#include <gtest/gtest.h>
#include "spool/spool.hpp"
TEST(Poll, Basic) {
  spool::Poll<int> p = 3;
  EXPECT_TRUE(p.is_ready());
}
