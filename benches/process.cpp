// W16 process_spawn: 8 tasks each run /bin/true 16 times in a row (stdin, stdout and stderr
// null) and await its exit status, which must be success; op = one spawn + wait. The code
// shape of the tokio peer's w16_process_spawn (shared/peers/tokio/src/main.rs):
// Command::status(), spawned tasks joined by the root under block_on.
#include <cstddef>
#include <vector>

#include "harness.hpp"
#include "spool/process.hpp"
#include "spool/runtime.hpp"

namespace spool_bench {

namespace {

constexpr std::size_t kSpawners = 8;
constexpr std::size_t kRunsEach = 16;

spool::Task<void> w16_spawner() {
  using spool::process::Stdio;
  for (std::size_t i = 0; i < kRunsEach; ++i) {
    const spool::process::ExitStatus st = co_await spool::process::Command("/bin/true")
                                              .stdin(Stdio::null())
                                              .stdout(Stdio::null())
                                              .stderr(Stdio::null())
                                              .status();
    check_in_task(st.success(), "process_spawn: /bin/true did not exit with status 0");
  }
}

spool::Task<void> w16_root() {
  std::vector<spool::JoinHandle<void>> spawners;
  for (std::size_t i = 0; i < kSpawners; ++i) spawners.push_back(spool::spawn(w16_spawner()));
  for (auto& h : spawners) co_await h;
}

void w16_process_spawn(const Config& cfg) {
  spool::Runtime rt = make_runtime(cfg);
  auto samples = measure(cfg, [&] {
    const auto t0 = Clock::now();
    rt.block_on(w16_root());
    return Clock::now() - t0;
  });
  report_ns_per_op("process_spawn", samples, kSpawners * kRunsEach);
}

}  // namespace

std::vector<Workload> process_workloads() {
  return {
      {"W16", "process_spawn", w16_process_spawn},
  };
}

}  // namespace spool_bench
