// A child's environment (inherited, set, removed, cleared; PATH lookups in the child's PATH)
// and its working directory (set, missing: the error names it).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "spool/spool.hpp"

namespace env_cwd_test {
namespace {

using spool::Task;
using spool::process::Command;
using spool::process::Output;

// What `cmd` writes to stdout, run to its end under spool::block_on.
std::string stdout_of(const Command& cmd) {
  const Output out = spool::block_on(cmd.output());
  EXPECT_TRUE(out.status.success()) << out.status.to_string() << ": " << out.stderr;
  return out.stdout;
}

Command sh(const std::string& script) { return Command("sh").arg("-c").arg(script); }

TEST(ProcessEnv, InheritedSetAndRemoved) {
  ASSERT_EQ(::setenv("SPOOL_TEST_INHERITED", "from the parent", 1), 0);
  EXPECT_EQ(stdout_of(sh("echo \"$SPOOL_TEST_INHERITED\"")), "from the parent\n");
  EXPECT_EQ(stdout_of(sh("echo \"$SPOOL_TEST_INHERITED\"").env("SPOOL_TEST_INHERITED", "set")),
            "set\n");
  EXPECT_EQ(
      stdout_of(sh("echo \"${SPOOL_TEST_INHERITED-removed}\"").env_remove("SPOOL_TEST_INHERITED")),
      "removed\n");
  ::unsetenv("SPOOL_TEST_INHERITED");
}

// A NUL byte would end a string early in the child, and a variable's name cannot be empty
// or hold '=': each is refused when it is given, naming the setter.
TEST(ProcessMisuse, NulBytesAndBadVariableNamesAreRefused) {
  const std::string nul("a\0b", 3);
  auto refused = [](auto set) {
    try {
      Command cmd("true");
      set(cmd);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(refused([&](Command& c) { c.arg(nul); }).find("Command::arg"), std::string::npos);
  EXPECT_NE(refused([&](Command& c) { c.env("K", nul); }).find("NUL"), std::string::npos);
  EXPECT_NE(refused([&](Command& c) { c.env("A=B", "v"); }).find("'='"), std::string::npos);
  EXPECT_NE(refused([&](Command& c) { c.env_remove(""); }).find("env_remove"), std::string::npos);
  EXPECT_NE(refused([&](Command& c) { c.current_dir(nul); }).find("current_dir"),
            std::string::npos);
  EXPECT_NE(refused([&](Command&) { Command bad(nul); }).find("NUL"), std::string::npos);
}

TEST(ProcessEnv, ClearedLeavesOnlyWhatIsSet) {
  EXPECT_EQ(stdout_of(Command("/usr/bin/env").env_clear().env("ONLY", "this")), "ONLY=this\n");
}

// A program named without a '/' is looked up in the child's PATH when env sets one.
TEST(ProcessEnv, LookupUsesTheChildsPath) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("spool-path-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto script = dir / "spool-hello";
  {
    std::FILE* f = std::fopen(script.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("#!/bin/sh\necho hello from PATH\n", f);
    std::fclose(f);
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  EXPECT_EQ(stdout_of(Command("spool-hello").env("PATH", dir.string() + ":/usr/bin:/bin")),
            "hello from PATH\n");
  try {
    (void)Command("spool-hello").spawn();  // not in the parent's PATH
    ADD_FAILURE() << "found without the child's PATH";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory);
  }
  std::filesystem::remove_all(dir);
}

TEST(ProcessCwd, SetAndMissing) {
  const std::string tmp = std::filesystem::canonical(std::filesystem::temp_directory_path());
  EXPECT_EQ(stdout_of(Command("pwd").current_dir(tmp)), tmp + "\n");
  try {
    (void)Command("pwd").current_dir("/nonexistent/dir").spawn();
    ADD_FAILURE() << "spawned in a missing directory";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory);
    EXPECT_NE(std::string(e.what()).find("in directory \"/nonexistent/dir\""), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace env_cwd_test
