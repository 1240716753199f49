// JoinError's message: the task's id and, for a task that threw, the innermost cause's what().
#include <exception>
#include <optional>
#include <string>

#include "spool/detail/join.hpp"

namespace spool::detail {
namespace {

// The what() of the innermost std::exception of the chain that starts at `cause` (each
// std::nested_exception layer leads to the one it holds), or nullopt when no layer is a
// std::exception. A JoinError of an awaited task is such a layer: the root cause shows
// through any number of tasks.
std::optional<std::string> innermost_what(std::exception_ptr cause) {
  std::optional<std::string> what;
  while (cause) {
    try {
      std::rethrow_exception(cause);
    } catch (const std::exception& e) {
      what = e.what();
      const auto* nested = dynamic_cast<const std::nested_exception*>(&e);
      cause = nested ? nested->nested_ptr() : nullptr;
    } catch (const std::nested_exception& e) {  // nests without being a std::exception
      cause = e.nested_ptr();
    } catch (...) {
      cause = nullptr;  // not a std::exception: no message, nothing nested
    }
  }
  return what;
}

}  // namespace

std::string join_error_message(bool cancelled, std::uint64_t id, std::exception_ptr cause) {
  std::string message = "spool: task " + std::to_string(id);
  if (cancelled) return message + " was cancelled";
  std::optional<std::string> what = innermost_what(std::move(cause));
  if (!what) return message + " threw an exception not derived from std::exception";
  return message + " threw an exception: " + *what;
}

}  // namespace spool::detail
