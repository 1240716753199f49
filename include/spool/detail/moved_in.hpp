// The check behind the combinators' "pass futures by std::move(...)" error.
#pragma once

#include <type_traits>

#include "spool/config.hpp"

namespace spool::detail {

// True when no one of `Fs` (deduced from forwarding references) is an lvalue: a combinator
// owns, polls in place and cancels its children, so a named future must be moved in.
template <class... Fs>
inline constexpr bool all_moved_in = (!std::is_lvalue_reference_v<Fs> && ...);

}  // namespace spool::detail
