// spool::asio::use_task: the completion token that makes any Asio initiating function a
// spool future: `co_await sock.async_read_some(buf, spool::asio::use_task)` in a spool task.
#pragma once

// First: it refuses -fno-exceptions builds before Boost is looked for.
#include "spool/config.hpp"

#include <concepts>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include "spool/asio/errors.hpp"
#include "spool/asio/op_state.hpp"
#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"

namespace spool::asio {

/// The completion token type of use_task.
struct use_task_t {
  constexpr use_task_t() noexcept = default;
};

/// Pass as the completion token of any Asio initiating function to get a spool future of
/// its result, to co_await in a spool task (or poll under any executor):
///
///     std::size_t n = co_await sock.async_read_some(boost::asio::buffer(buf), use_task);
///
/// The operation starts at the future's first poll, on the polling thread. A leading
/// error_code in the completion signature is thrown as boost::system::system_error when set
/// (an exception_ptr is rethrown); the other arguments are the value: none (void), one, or a
/// std::tuple. An Asio cancellation (sock.cancel(), a parent's cancellation slot) completes
/// the future with operation_aborted. Dropping the pending future cancels the operation
/// through its cancellation slot (terminal), on the operation's executor, before the drop
/// returns: the I/O object may be destroyed right after (docs/asio.md).
inline constexpr use_task_t use_task{};

namespace detail {

template <class T>
concept HasExecutor = requires(T& t) {
  {t.get_executor()};
  requires std::is_constructible_v<boost::asio::any_io_executor, decltype(t.get_executor())>;
};

template <class A>
boost::asio::any_io_executor executor_of_arg(A& a) {
  if constexpr (std::is_pointer_v<A> && HasExecutor<std::remove_pointer_t<A>>) {
    return a ? boost::asio::any_io_executor(a->get_executor()) : boost::asio::any_io_executor();
  } else if constexpr (HasExecutor<A>) {
    return boost::asio::any_io_executor(a.get_executor());
  } else {
    return {};
  }
}

// The executor the operation runs on: its initiation's (every Asio I/O object's initiation
// has one), else that of the first argument that has one (Beast passes `&stream`), else none.
template <class Init, class... A>
boost::asio::any_io_executor executor_of(Init& init, A&... args) {
  if constexpr (HasExecutor<Init>) {
    return boost::asio::any_io_executor(init.get_executor());
  } else {
    boost::asio::any_io_executor found;
    ((found ? void() : void(found = executor_of_arg(args))), ...);
    return found;
  }
}

// The completion handler Asio calls: claims the op, stores the arguments, wakes the task.
// Destroyed uncalled (its io_context destroyed), it fails the op with OperationAbandoned.
template <class... Args>
class UseTaskHandler {
 public:
  using cancellation_slot_type = boost::asio::cancellation_slot;

  explicit UseTaskHandler(std::shared_ptr<Op<Args...>> op) noexcept : op_(std::move(op)) {}
  UseTaskHandler(UseTaskHandler&&) noexcept = default;
  UseTaskHandler& operator=(UseTaskHandler&&) = delete;
  ~UseTaskHandler() {
    if (op_) {
      op_->handler_gone();
      op_->fail(std::make_exception_ptr(OperationAbandoned(
          "spool::asio::use_task: Asio destroyed the operation's handler without calling it "
          "(its io_context was destroyed or shut down while the task waited)")));
    }
  }

  cancellation_slot_type get_cancellation_slot() const noexcept { return op_->slot(); }

  template <class... A>
  void operator()(A&&... args) {
    std::shared_ptr<Op<Args...>> op = std::move(op_);
    op->handler_gone();
    if (op->claim()) {
      op->set_value(std::forward<A>(args)...);
      op->publish();
    }
  }

 private:
  std::shared_ptr<Op<Args...>> op_;
};

// What a completion signature's arguments give the task: the error first (thrown), then the
// value (void, one, or a tuple).
template <class... Args>
struct UseTaskResult {
  using value_type = std::conditional_t<
      sizeof...(Args) == 0, void,
      std::conditional_t<sizeof...(Args) == 1, std::tuple_element_t<0, std::tuple<Args..., void>>,
                         std::tuple<Args...>>>;
  static value_type make(std::tuple<Args...>&& t) {
    if constexpr (sizeof...(Args) == 0) {
      return;
    } else if constexpr (sizeof...(Args) == 1) {
      return std::move(std::get<0>(t));
    } else {
      return std::move(t);
    }
  }
};
template <class... Rest>
struct UseTaskResult<boost::system::error_code, Rest...> {
  using value_type = typename UseTaskResult<Rest...>::value_type;
  static value_type make(std::tuple<boost::system::error_code, Rest...>&& t) {
    if (std::get<0>(t)) throw boost::system::system_error(std::get<0>(t));
    return std::apply(
        [](boost::system::error_code&, Rest&... rest) {
          return UseTaskResult<Rest...>::make(std::tuple<Rest...>(std::move(rest)...));
        },
        t);
  }
};
template <class... Rest>
struct UseTaskResult<std::exception_ptr, Rest...> {
  using value_type = typename UseTaskResult<Rest...>::value_type;
  static value_type make(std::tuple<std::exception_ptr, Rest...>&& t) {
    if (std::get<0>(t)) std::rethrow_exception(std::get<0>(t));
    return std::apply(
        [](std::exception_ptr&, Rest&... rest) {
          return UseTaskResult<Rest...>::make(std::tuple<Rest...>(std::move(rest)...));
        },
        t);
  }
};

}  // namespace detail

/// The future an initiating function returns for use_task: lazy (nothing starts before the
/// first poll), single-use, movable until first polled. `Args` are the completion
/// signature's decayed arguments.
template <class Init, class InitArgs, class... Args>
class [[nodiscard]] UseTaskFuture {
  using Result = detail::UseTaskResult<Args...>;

 public:
  /// What the task gets (see use_task).
  using value_type = typename Result::value_type;

  /// Stores the initiation and its arguments (Asio's async_result does this).
  UseTaskFuture(Init init, InitArgs args) : init_(std::move(init)), args_(std::move(args)) {}
  /// Moves the future (only before its first poll, as any future).
  UseTaskFuture(UseTaskFuture&&) noexcept = default;
  UseTaskFuture& operator=(UseTaskFuture&&) = delete;
  UseTaskFuture(const UseTaskFuture&) = delete;
  UseTaskFuture& operator=(const UseTaskFuture&) = delete;
  /// Dropped while the operation is pending: cancels it (see use_task) before returning.
  ~UseTaskFuture() {
    if (op_ && !finished_) op_->cancel_from_drop();
  }

  /// Starts the operation at the first poll; ready once its handler ran (on the io_context's
  /// thread, or inline). Throws the operation's error, IoContextStopped, OperationAbandoned,
  /// or std::logic_error when polled after it was ready.
  Poll<value_type> poll(Context& cx) {
    if (finished_) throw std::logic_error("spool::asio::use_task future polled after it was ready");
    if (!op_) start();
    // Checked before and after the registration: a handler on another thread between the
    // two finds no waker or wakes the registered one; one that ran inline needs no wake-up.
    if (!op_->done()) {
      op_->waker().register_waker(cx.waker());
      if (!op_->done()) return pending;
    }
    finished_ = true;
    if constexpr (std::is_void_v<value_type>) {
      Result::make(op_->take());
      return Poll<void>::ready();
    } else {
      return Poll<value_type>::ready(Result::make(op_->take()));
    }
  }

 private:
  void start() {
    op_ = std::make_shared<detail::Op<Args...>>();
    auto executor =
        std::apply([this](auto&... a) { return detail::executor_of(*init_, a...); }, args_);
    if (!op_->attach(std::move(executor))) {
      op_->fail(std::make_exception_ptr(IoContextStopped(
          "spool::asio::use_task: the operation's io_context is stopped; the operation was not "
          "started (restart() the io_context and run it, or drive it, first)")));
      return;
    }
    Init init = std::move(*init_);
    init_.reset();
    std::apply(
        [&](auto&&... a) {
          std::move(init)(detail::UseTaskHandler<Args...>(op_), std::move(a)...);
        },
        std::move(args_));
  }

  std::optional<Init> init_;
  InitArgs args_;
  std::shared_ptr<detail::Op<Args...>> op_;
  bool finished_ = false;
};

}  // namespace spool::asio

namespace boost::asio {

/// Makes spool::asio::use_task a completion token for signature void(Args...).
template <class... Args>
class async_result<spool::asio::use_task_t, void(Args...)> {
 public:
  /// Starts nothing: returns the lazy future that starts the operation at its first poll.
  template <class Init, class... InitArgs>
  static auto initiate(Init&& init, spool::asio::use_task_t, InitArgs&&... args) {
    return spool::asio::UseTaskFuture<std::decay_t<Init>, std::tuple<std::decay_t<InitArgs>...>,
                                      std::decay_t<Args>...>(
        std::forward<Init>(init),
        std::tuple<std::decay_t<InitArgs>...>(std::forward<InitArgs>(args)...));
  }
};

}  // namespace boost::asio
