// Checks one frame of an async backtrace: its exact file, line and function where the
// compiler records sites (g++), unknown ones where it cannot (clang before 15).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "spool/core/backtrace.hpp"

namespace spool_backtrace_test {

/// `s` is the co_await at `file`:`line` in a function whose name contains `function(`.
inline void expect_site(const spool::AwaitSite& s, const char* file, std::uint32_t line,
                        const char* function) {
#if defined(__cpp_lib_source_location)
  EXPECT_STREQ(s.file, file);
  EXPECT_EQ(s.line, line);
  EXPECT_NE(std::string(s.function).find(std::string(function) + "("), std::string::npos)
      << s.function;
#else
  (void)file, (void)line, (void)function;
  EXPECT_STREQ(s.file, "");
  EXPECT_EQ(s.line, 0u);
#endif
}

}  // namespace spool_backtrace_test
