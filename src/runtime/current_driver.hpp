// The driver stack that leaves made on the calling thread belong to.
#pragma once

#include <memory>

#include "driver/driver.hpp"

namespace spool::detail {

// The driver of the runtime the calling thread is in (a worker, a blocking thread, a
// block_on), or the process-wide one outside every runtime.
const std::shared_ptr<Driver>& current_driver();

}  // namespace spool::detail
