// Without spool::tls (no OpenSSL at build time): no W17 (tls.cpp has it).
#include "harness.hpp"

namespace spool_bench {

std::vector<Workload> tls_workloads() { return {}; }

}  // namespace spool_bench
