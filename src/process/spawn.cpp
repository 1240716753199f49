// Command: its settings, and spawning a child with posix_spawn.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "process/exit_watch.hpp"
#include "process/pidfd.hpp"
#include "runtime/current_driver.hpp"
#include "spool/process/command.hpp"

extern char** environ;  // NOLINT: POSIX's, for the child's inherited environment

namespace spool::process {

namespace {

// An owned descriptor.
class Fd {
 public:
  Fd() noexcept = default;
  explicit Fd(int fd) noexcept : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

[[noreturn]] void throw_errno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

// A posix_spawn file action or attribute: its error (ENOMEM, EBADF...) is the spawn's.
void check_spawn_step(int rc, const std::string& what, const char* step) {
  if (rc != 0) throw_errno(rc, what + ": " + step);
}

// A pipe for child descriptor `target` (0, 1, 2): the child's end (blocking, as a child
// expects its stdio, and at 3 or above so that no dup2 of the spawn overwrites another), and
// the parent's end (non-blocking, for the driver). Both close-on-exec: the spawn's dup2 makes
// the child's copy inheritable.
std::pair<Fd, Fd> stdio_pipe(int target, const std::string& what) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno(errno, what + ": pipe2");
  Fd read_end(fds[0]);
  Fd write_end(fds[1]);
  const bool to_child = target == STDIN_FILENO;
  Fd& child = to_child ? read_end : write_end;
  if (child.get() <= STDERR_FILENO) {
    Fd moved(::fcntl(child.get(), F_DUPFD_CLOEXEC, STDERR_FILENO + 1));
    if (moved.get() < 0) throw_errno(errno, what + ": fcntl(F_DUPFD_CLOEXEC)");
    child = std::move(moved);
  }
  // (The two ends are two open files: the flag stays off the child's.)
  Fd& parent = to_child ? write_end : read_end;
  if (::fcntl(parent.get(), F_SETFL, O_NONBLOCK) != 0) throw_errno(errno, what + ": fcntl");
  return {std::move(child), std::move(parent)};
}

// The file that `program` names, as execvp finds it: itself if it has a '/', else the first
// executable file of that name in `path`'s directories. Sets `err` (ENOENT, or EACCES when
// only files that cannot be executed were found) and returns "" if there is none.
std::string find_program(const std::string& program, std::string_view path, int& err) {
  if (program.find('/') != std::string::npos) return program;
  err = ENOENT;
  while (true) {
    const std::size_t colon = path.find(':');
    const std::string_view dir = path.substr(0, colon);
    std::string candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + program;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      err = EACCES;
    }
    if (colon == std::string_view::npos) return {};
    path.remove_prefix(colon + 1);
  }
}

// The posix_spawn settings, destroyed with it.
struct SpawnSettings {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnSettings() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnSettings() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSettings(const SpawnSettings&) = delete;
  SpawnSettings& operator=(const SpawnSettings&) = delete;
};

// Pointers to `strings`, ending with a null one (argv, envp).
std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string Command::c_string(std::string s, const char* what) {
  if (s.find('\0') != std::string::npos) {
    throw std::invalid_argument(std::string("spool::process::Command::") + what +
                                ": the string contains a NUL byte, where the child would see "
                                "it end; pass it without one");
  }
  return s;
}

// An environment variable's name: what env() and env_remove() accept.
std::string Command::env_key(std::string key, const char* what) {
  if (key.empty() || key.find('=') != std::string::npos) {
    throw std::invalid_argument(std::string("spool::process::Command::") + what +
                                ": the variable name \"" + key +
                                "\" is empty or contains '='; name one variable");
  }
  return c_string(std::move(key), what);
}

Command::Command(std::string program) : program_(c_string(std::move(program), "Command")) {
  if (program_.empty()) {
    throw std::invalid_argument("spool::process::Command: the program is empty; name a program");
  }
}

Command& Command::arg(std::string arg) {
  args_.push_back(c_string(std::move(arg), "arg"));
  return *this;
}

Command& Command::args(std::initializer_list<std::string_view> args) {
  for (std::string_view a : args) arg(std::string(a));
  return *this;
}

Command& Command::env(std::string key, std::string value) {
  env_[env_key(std::move(key), "env")] = c_string(std::move(value), "env");
  return *this;
}

Command& Command::env_remove(std::string key) {
  env_[env_key(std::move(key), "env_remove")] = std::nullopt;
  return *this;
}

Command& Command::env_clear() {
  env_clear_ = true;
  env_.clear();
  return *this;
}

Command& Command::process_group(pid_t pgid) {
  if (pgid < 0) {
    throw std::invalid_argument("spool::process::Command::process_group: pgid " +
                                std::to_string(pgid) + " is negative; pass 0 for a new group");
  }
  pgid_ = pgid;
  return *this;
}

Child Command::spawn() const {
  return spawn_with(Stdio::inherit(), Stdio::inherit(), Stdio::inherit());
}

namespace {
Task<ExitStatus> wait_for(Child child) { co_return co_await child.wait(); }
}  // namespace

Task<ExitStatus> Command::status() const { return wait_for(spawn()); }

Task<Output> Command::output() const {
  return spawn_with(Stdio::null(), Stdio::piped(), Stdio::piped()).wait_with_output();
}

Child Command::spawn_with(Stdio in, Stdio out, Stdio err) const {
  const std::string what = "spool::process::Command::spawn(\"" + program_ + "\")" +
                           (dir_ ? " in directory \"" + *dir_ + "\"" : "");
  const std::array<Stdio, 3> stdio{stdin_.value_or(in), stdout_.value_or(out),
                                   stderr_.value_or(err)};
  SpawnSettings s;
  std::array<Fd, 3> child_ends;
  // The parent's ends are registered before the spawn: a registration that fails (out of
  // memory, a runtime shutting down) then leaves no child behind.
  const std::shared_ptr<detail::Driver>& driver = detail::current_driver();
  std::optional<PipeWriter> parent_in;
  std::array<std::optional<PipeReader>, 3> parent_out;  // [1]: stdout, [2]: stderr
  for (int i = 0; i < 3; ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (stdio[k].kind() == Stdio::Kind::kPiped) {
      Fd parent_end;
      std::tie(child_ends[k], parent_end) = stdio_pipe(i, what);
      check_spawn_step(posix_spawn_file_actions_adddup2(&s.actions, child_ends[k].get(), i), what,
                       "posix_spawn_file_actions_adddup2");
      detail::IoSource source(driver, parent_end.release(), what.c_str(), {.socket = false});
      if (i == STDIN_FILENO) {
        parent_in.emplace(PipeWriter(std::move(source)));
      } else {
        parent_out[k].emplace(PipeReader(std::move(source)));
      }
    } else if (stdio[k].kind() == Stdio::Kind::kNull) {
      check_spawn_step(posix_spawn_file_actions_addopen(&s.actions, i, "/dev/null",
                                                        i == 0 ? O_RDONLY : O_WRONLY, 0),
                       what, "posix_spawn_file_actions_addopen(/dev/null)");
    }
  }
  if (dir_) {
    check_spawn_step(posix_spawn_file_actions_addchdir_np(&s.actions, dir_->c_str()), what,
                     "posix_spawn_file_actions_addchdir_np");
  }
  short flags = POSIX_SPAWN_SETSIGMASK;
  sigset_t none;
  sigemptyset(&none);
  check_spawn_step(posix_spawnattr_setsigmask(&s.attr, &none), what, "posix_spawnattr_setsigmask");
  if (pgid_) {
    flags |= POSIX_SPAWN_SETPGROUP;
    check_spawn_step(posix_spawnattr_setpgroup(&s.attr, *pgid_), what, "posix_spawnattr_setpgroup");
  }
  check_spawn_step(posix_spawnattr_setflags(&s.attr, flags), what, "posix_spawnattr_setflags");

  std::vector<std::string> argv_strings{program_};
  argv_strings.insert(argv_strings.end(), args_.begin(), args_.end());
  std::vector<std::string> env_strings;
  if (!env_clear_) {
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view entry(*e);
      if (!env_.contains(std::string(entry.substr(0, entry.find('='))))) {
        env_strings.emplace_back(entry);
      }
    }
  }
  const char* parent_path = ::getenv("PATH");
  std::string_view path = parent_path != nullptr ? parent_path : "/bin:/usr/bin";
  for (const auto& [key, value] : env_) {
    if (value) env_strings.push_back(key + "=" + *value);
    if (key == "PATH" && value) path = *value;
  }
  int not_found = 0;
  const std::string file = find_program(program_, path, not_found);
  if (file.empty()) throw_errno(not_found, what);
  std::vector<char*> argv = c_strings(argv_strings);
  std::vector<char*> envp = c_strings(env_strings);
  pid_t pid = -1;
  // glibc's posix_spawn runs the child in this process's memory until its exec, and
  // returns the exec's (or chdir's, or open's) errno: no CLOEXEC pipe is needed to learn it.
  const int rc = ::posix_spawn(&pid, file.c_str(), &s.actions, &s.attr, argv.data(), envp.data());
  if (rc != 0) throw_errno(rc, what);

  // From here on, whatever throws, `child`'s destructor hands the child to the orphan
  // reaper (killing it first with kill_on_drop): a child is never left unwatched.
  Child child;
  child.pid_ = pid;
  child.kill_on_drop_ = kill_on_drop_;
  const int fd = detail::open_child_pidfd(pid);
  if (fd < 0 && (errno == ECHILD || errno == ESRCH)) {
    child.reaped_elsewhere_ = true;  // (SIGCHLD ignored, or someone's waitpid(-1), was quick)
  } else {
    child.watch_exit(fd);
  }
  for (auto& end : child_ends) end = Fd();  // the child has its copies
  child.stdin = std::move(parent_in);
  child.stdout = std::move(parent_out[1]);
  child.stderr = std::move(parent_out[2]);
  return child;
}

}  // namespace spool::process
