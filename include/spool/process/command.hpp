// spool::process::Command: how to start a child process (tokio's Command).
#pragma once

#include <sys/types.h>

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spool/core/task.hpp"
#include "spool/process/child.hpp"

namespace spool::process {

/// What a child's stdin, stdout or stderr is.
class Stdio {
 public:
  /// The parent's own descriptor (the default of spawn and status).
  static Stdio inherit() noexcept { return Stdio(Kind::kInherit); }
  /// /dev/null: reading gives the end at once, writes are thrown away.
  static Stdio null() noexcept { return Stdio(Kind::kNull); }
  /// A new pipe, whose other end becomes Child::stdin, stdout or stderr.
  static Stdio piped() noexcept { return Stdio(Kind::kPiped); }

  /// The three kinds.
  enum class Kind { kInherit, kNull, kPiped };
  /// This one's kind.
  Kind kind() const noexcept { return kind_; }

 private:
  explicit Stdio(Kind kind) noexcept : kind_(kind) {}
  Kind kind_;
};

/// A program to run, with its arguments, environment, directory and stdio: build it, then
/// spawn() it (or status() / output() for a run to its end). Copyable; spawning does not
/// change it, so one Command may start many children.
///
///     auto out = co_await spool::process::Command("git").arg("rev-parse").arg("HEAD").output();
///
/// The child is started with posix_spawn (glibc's runs the child in the parent's memory
/// until its exec, and reports an exec failure as its result). Every descriptor spool
/// opens is close-on-exec, so the child gets only its stdio; descriptors the application
/// opened without close-on-exec are inherited, as with any fork and exec. The child starts
/// with no signal blocked; signals the parent ignores stay ignored (POSIX).
class SPOOL_API Command {
 public:
  /// Runs `program`: a path, or a name looked up in PATH (the child's, if env() sets one,
  /// else the parent's) as execvp does. It is also the child's argv[0].
  explicit Command(std::string program);

  /// Adds one argument.
  Command& arg(std::string arg);
  /// Adds arguments, in order.
  Command& args(std::initializer_list<std::string_view> args);
  /// Sets `key` to `value` in the child's environment.
  Command& env(std::string key, std::string value);
  /// Removes `key` from the child's environment.
  Command& env_remove(std::string key);
  /// Starts the child's environment empty (then only what env() sets), rather than from
  /// the parent's.
  Command& env_clear();
  /// Runs the child in `dir` (the parent's directory by default).
  Command& current_dir(std::string dir) {
    return set(dir_, c_string(std::move(dir), "current_dir"));
  }
  /// The child's stdin (default: inherit for spawn and status, null for output).
  Command& stdin(Stdio s) { return set(stdin_, s); }
  /// The child's stdout (default: inherit for spawn and status, piped for output).
  Command& stdout(Stdio s) { return set(stdout_, s); }
  /// The child's stderr (default: inherit for spawn and status, piped for output).
  Command& stderr(Stdio s) { return set(stderr_, s); }
  /// Kill the child with SIGKILL if its Child is destroyed while it still runs (default:
  /// it runs on, and is reaped when it exits).
  Command& kill_on_drop(bool on) { return set(kill_on_drop_, on); }
  /// Puts the child in process group `pgid`; 0 makes a new group whose id is the child's
  /// pid (a shell's job: a terminal's Ctrl-C then no longer reaches it).
  Command& process_group(pid_t pgid);

  /// Starts the child. Its piped stdio are registered with the current runtime's driver
  /// (the process-wide one outside every runtime). Throws std::system_error naming the
  /// program (and the directory, if set) with the errno when it cannot be started: ENOENT
  /// for a program not found, EACCES for one not executable, ENOENT for a missing
  /// directory...
  Child spawn() const;
  /// Spawns the child (stdio inherited unless set) and waits for its exit.
  Task<ExitStatus> status() const;
  /// Spawns the child with stdout and stderr piped and stdin null (unless set), and
  /// collects them while it waits (Child::wait_with_output).
  Task<Output> output() const;

  /// The program, as given.
  const std::string& program() const noexcept { return program_; }

 private:
  // spawn() with these for the stdio left unset.
  Child spawn_with(Stdio in, Stdio out, Stdio err) const;
  // `s`, checked to hold no NUL byte (which would end it early in the child); throws
  // std::invalid_argument naming `what` (the setter) otherwise.
  static std::string c_string(std::string s, const char* what);
  // `key`, checked to be a variable's name (not empty, no '=', no NUL).
  static std::string env_key(std::string key, const char* what);
  // What every plain setter does: stores `value` in `field`, for chaining.
  template <class Field, class Value>
  Command& set(Field& field, Value value) {
    field = std::move(value);
    return *this;
  }

  std::string program_;
  std::vector<std::string> args_;
  std::map<std::string, std::optional<std::string>> env_;  // nullopt: removed
  bool env_clear_ = false;
  std::optional<std::string> dir_;
  std::optional<Stdio> stdin_, stdout_, stderr_;
  bool kill_on_drop_ = false;
  std::optional<pid_t> pgid_;
};

}  // namespace spool::process
