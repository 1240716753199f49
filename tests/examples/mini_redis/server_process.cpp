#include "server_process.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <system_error>

extern char** environ;

namespace mini_redis_test {

namespace {

// The environment, with a small ASan quarantine (by default it keeps 256 MB of freed memory
// resident, which would hide what the server itself holds).
std::vector<std::string> child_environment() {
  std::vector<std::string> env;
  std::string asan = "ASAN_OPTIONS=";
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "ASAN_OPTIONS=", 13) == 0) {
      asan = std::string(*e) + ":";
    } else {
      env.emplace_back(*e);
    }
  }
  env.push_back(asan + "quarantine_size_mb=8");
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (std::string& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

}  // namespace

ServerProcess::ServerProcess(const std::vector<std::string>& flags) {
  std::vector<std::string> args{MINI_REDIS_BINARY, "--port", "0"};
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<std::string> env = child_environment();
  int out[2];
  if (::pipe(out) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  const int err = ::posix_spawn(&pid_, MINI_REDIS_BINARY, &actions, nullptr, pointers(args).data(),
                                pointers(env).data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (err != 0) {
    ::close(out[0]);
    throw std::system_error(err, std::generic_category(), "posix_spawn " MINI_REDIS_BINARY);
  }
  // "mini-redis: listening on 127.0.0.1:PORT"
  FILE* lines = ::fdopen(out[0], "r");
  char line[256] = {};
  const bool got = lines != nullptr && std::fgets(line, sizeof line, lines) != nullptr;
  if (lines != nullptr) std::fclose(lines);  // its later output is not needed (nor read)
  const char* colon = got ? std::strrchr(line, ':') : nullptr;
  if (colon == nullptr) {
    terminate();
    throw std::runtime_error(std::string("mini-redis did not say where it listens: ") + line);
  }
  address_ = spool::net::SocketAddr("127.0.0.1", static_cast<std::uint16_t>(std::atoi(colon + 1)));
}

ServerProcess::~ServerProcess() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

int ServerProcess::terminate() {
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

long ServerProcess::status_kib(const char* field) const {
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
  std::string name;
  while (status >> name) {
    if (name == field) {
      long kib = 0;
      status >> kib;
      return kib;
    }
  }
  ADD_FAILURE() << field << " not found for pid " << pid_;
  return 0;
}

}  // namespace mini_redis_test
