// Which execution context the calling thread drives (spool::asio::drive), if any.
#pragma once

#include <boost/asio/execution_context.hpp>

namespace spool::asio::detail {

// The context drive() runs on this thread, or null. While set, nothing but this thread runs
// it (drive's contract), so this thread may cancel its operations directly.
boost::asio::execution_context*& driven_here() noexcept;

class OpRegistry;
// The registry of driven_here()'s context while it is set (a use_task operation started on
// that context finds it here instead of in Asio's service registry, which takes a mutex).
OpRegistry*& driven_registry() noexcept;

}  // namespace spool::asio::detail
