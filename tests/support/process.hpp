// Helpers of the process tests: this process's children (all, or the zombies), read from /proc.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace spool_process_test {

/// The pids of this process's children in `state` (/proc/<pid>/stat's state letter), or of
/// all of them when `state` is 0. Scans /proc/<pid>/stat for a parent that is this process.
inline std::vector<pid_t> children(char state = 0) {
  std::vector<pid_t> found;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  while (const dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;  // (gone meanwhile)
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the last ')' ends it.
    const std::size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char its_state = 0;
    long ppid = 0;
    rest >> its_state >> ppid;
    if (ppid == ::getpid() && (state == 0 || its_state == state)) {
      found.push_back(static_cast<pid_t>(pid));
    }
  }
  ::closedir(proc);
  return found;
}

/// The pids of this process's children that are zombies (state Z): exited, not reaped.
inline std::vector<pid_t> zombie_children() { return children('Z'); }

}  // namespace spool_process_test
