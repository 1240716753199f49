// The children of a combinator, by position: a fixed list of futures of any types
// (TupleBranches) or a vector of futures of one type (VecBranches). Both give the same
// interface to Children (children.hpp) and to when_all / when_any, which build their results
// with take_all (every output) and take_any (the winner's).
#pragma once

#include <cstddef>
#include <optional>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "spool/combinators/branch_output.hpp"
#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/detail/branch.hpp"

namespace spool::detail {

// Children of the types Fs..., in argument order.
template <Future... Fs>
class TupleBranches {
 public:
  // when_all's result: every output, in order.
  using AllOutput = std::tuple<branch_output_t<Fs>...>;
  // when_any's result: the winner's output, at the winner's index.
  using AnyOutput = std::variant<branch_output_t<Fs>...>;

  // Each Branch is built in place from its future.
  template <class... Args>
  explicit TupleBranches(Args&&... futs) : branches_(std::forward<Args>(futs)...) {}

  std::size_t size() const noexcept { return sizeof...(Fs); }

  // Polls child i with `cx` unless it is finished, linked to `awaiting` (Branch::poll); true
  // when it is ready now.
  bool poll(std::size_t i, Context& cx, const TaskPromiseBase* awaiting) {
    return visit(i, [&](auto& branch) { return branch.active() && branch.poll(cx, awaiting); });
  }
  // Adds each unfinished child to `bt`'s branches (Branch::describe).
  void describe_all(Backtrace& bt) const { describe_all(bt, std::index_sequence_for<Fs...>{}); }
  AllOutput take_all() {
    return std::apply([](auto&... branch) { return AllOutput(branch.take()...); }, branches_);
  }
  AnyOutput take_any(std::size_t i) { return take_any(i, std::index_sequence_for<Fs...>{}); }
  void cancel_all() noexcept {
    std::apply([](auto&... branch) { (branch.cancel(), ...); }, branches_);
  }

 private:
  // fn(branch i).
  template <class Fn>
  bool visit(std::size_t i, Fn&& fn) {
    return visit(i, fn, std::index_sequence_for<Fs...>{});
  }
  template <class Fn, std::size_t... Is>
  bool visit(std::size_t i, Fn& fn, std::index_sequence<Is...>) {
    bool result = false;
    ((i == Is ? void(result = fn(std::get<Is>(branches_))) : void()), ...);
    return result;
  }
  template <std::size_t... Is>
  void describe_all(Backtrace& bt, std::index_sequence<Is...>) const {
    (std::get<Is>(branches_).describe(Is, bt), ...);
  }
  template <std::size_t... Is>
  AnyOutput take_any(std::size_t i, std::index_sequence<Is...>) {
    std::optional<AnyOutput> out;
    ((i == Is ? void(out.emplace(std::in_place_index<Is>, std::get<Is>(branches_).take()))
              : void()),
     ...);
    return std::move(*out);
  }

  std::tuple<Branch<Fs>...> branches_;
};

// Any number of children of type F, in vector order.
template <Future F>
class VecBranches {
 public:
  // when_all's result: every output, in order.
  using AllOutput = std::vector<branch_output_t<F>>;
  // when_any's result: the winner's index and output.
  using AnyOutput = AnyOf<branch_output_t<F>>;

  explicit VecBranches(std::vector<F> futs) {
    branches_.reserve(futs.size());
    for (F& f : futs) branches_.emplace_back(std::move(f));
  }

  std::size_t size() const noexcept { return branches_.size(); }

  // Polls child i with `cx` unless it is finished, linked to `awaiting` (Branch::poll); true
  // when it is ready now.
  bool poll(std::size_t i, Context& cx, const TaskPromiseBase* awaiting) {
    return branches_[i].active() && branches_[i].poll(cx, awaiting);
  }
  // Adds each unfinished child to `bt`'s branches (Branch::describe).
  void describe_all(Backtrace& bt) const {
    for (std::size_t i = 0; i < branches_.size(); ++i) branches_[i].describe(i, bt);
  }
  AllOutput take_all() {
    AllOutput out;
    out.reserve(branches_.size());
    for (auto& branch : branches_) out.push_back(branch.take());
    return out;
  }
  AnyOutput take_any(std::size_t i) { return AnyOutput{i, branches_[i].take()}; }
  void cancel_all() noexcept {
    for (auto& branch : branches_) branch.cancel();
  }

 private:
  std::vector<Branch<F>> branches_;
};

}  // namespace spool::detail
