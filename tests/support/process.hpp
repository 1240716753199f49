// Helpers of the process tests: this process's zombie children, read from /proc.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace spool_process_test {

/// The pids of this process's children that are zombies (state Z): exited, not reaped.
/// Scans /proc/<pid>/stat for a parent that is this process.
inline std::vector<pid_t> zombie_children() {
  std::vector<pid_t> zombies;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return zombies;
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
    char state = 0;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid == ::getpid() && state == 'Z') zombies.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return zombies;
}

}  // namespace spool_process_test
