// The error for a use of a moved-from channel handle (broadcast and watch senders and
// receivers).
#pragma once

#include <stdexcept>
#include <string>

#include "spool/config.hpp"

namespace spool::detail {

/// Throws std::logic_error for `what` (e.g. "spool::watch::Sender::send") called on a
/// moved-from handle.
[[noreturn]] inline void throw_moved_from_handle(const char* what) {
  throw std::logic_error(std::string(what) +
                         " on a moved-from handle; use a live copy (or subscribe() anew)");
}

}  // namespace spool::detail
