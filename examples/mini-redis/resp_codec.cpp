#include "resp_codec.hpp"

#include <algorithm>
#include <utility>

namespace mini_redis {

namespace {
// What a connection keeps of its parsed arguments while it waits for its client.
constexpr std::size_t kKeepArguments = 64 * 1024;
}  // namespace

RespCodec::RespCodec(RespCodec&& other) noexcept
    : limits_(other.limits_),
      max_(other.max_),
      budget_(other.budget_),
      taken_(std::exchange(other.taken_, 0)),
      parsed_(std::move(other.parsed_)) {}

std::optional<std::reference_wrapper<const Command>> RespCodec::decode(spool::codec::Buffer& buf) {
  for (;;) {
    if (buf.empty()) return std::nullopt;
    const std::string_view held = buf.view();
    parse_command(std::span(held.data(), held.size()), limits_, parsed_);
    if (!parsed_.complete) return std::nullopt;
    buf.consume(parsed_.consumed);
    if (!parsed_.args.empty()) return std::cref(parsed_.args);  // else an empty inline line
  }
}

std::optional<std::reference_wrapper<const Command>> RespCodec::decode_eof(
    spool::codec::Buffer& buf) {
  auto command = decode(buf);
  if (!command) buf.clear();
  return command;
}

std::span<char> RespCodec::prepare_read(spool::codec::Buffer& buf) {
  const std::size_t held = buf.size();
  const std::size_t capacity = buf.capacity();
  if (capacity < kBase) buf.set_capacity(kBase);  // the first read
  if (capacity > kBase && std::max(held, parsed_.needed) < kBase) {
    // The large command was decoded: its memory goes back (a check per read, and a copy of
    // less than kBase bytes only after a large command). Budget after the allocation: a
    // throw leaves both as they were.
    buf.set_capacity(kBase);
    budget_->give_back(std::exchange(taken_, 0));
  } else if (held == capacity && capacity >= kBase) {
    // Full with one incomplete command: twice the size, or just what the command needs when
    // that is less (a single large argument is not given twice its size).
    if (capacity >= max_) throw QueryBufferFull("ERR query buffer limit reached (--max-query)");
    const std::size_t needed = parsed_.needed;
    std::size_t grown = needed > capacity && needed < 2 * capacity ? needed : 2 * capacity;
    grown = std::min(grown, max_);
    if (!budget_->try_take(grown - capacity)) {
      throw QueryBufferFull(
          "ERR query buffers of all connections at their limit (--max-query-total)");
    }
    try {
      buf.set_capacity(grown);
    } catch (...) {
      budget_->give_back(grown - capacity);  // nothing was taken after all
      throw;
    }
    taken_ += grown - capacity;
  }
  return buf.prepare(1);  // with room at the end already, or after moving the command left
}

void RespCodec::release_large_storage() {
  if (parsed_.storage() <= kKeepArguments) return;
  Command().swap(parsed_.args);
  // The spans too, unless a command being parsed still needs them (Parsed::resume).
  if (parsed_.resume == 0) decltype(parsed_.spans)().swap(parsed_.spans);
}

}  // namespace mini_redis
