// spool::branch_output and spool::AnyOf: how children's outputs appear in a combinator's result.
#pragma once

#include <cstddef>
#include <functional>
#include <variant>

#include "spool/core/future.hpp"

namespace spool {

/// How a child's output is stored in a combinator's result (a tuple, a variant, a vector,
/// an optional): a `void` output becomes `std::monostate`, a `T&` output
/// `std::reference_wrapper<T>`, any other `T` stays `T`.
template <class T>
struct branch_output {
  /// The stored type.
  using type = T;
};
/// `void` → `std::monostate`.
template <>
struct branch_output<void> {
  /// The stored type.
  using type = std::monostate;
};
/// `T&` → `std::reference_wrapper<T>`.
template <class T>
struct branch_output<T&> {
  /// The stored type.
  using type = std::reference_wrapper<T>;
};
/// The type a child future `F`'s output is stored as (see branch_output).
template <Future F>
using branch_output_t = typename branch_output<future_output_t<F>>::type;

/// What `when_any(std::vector<F>)` produces: the winner's position and its output.
template <class T>
struct AnyOf {
  /// The winner's position in the vector.
  std::size_t index;
  /// The winner's output.
  T value;
};

}  // namespace spool
