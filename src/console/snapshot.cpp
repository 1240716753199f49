#include "console/snapshot.hpp"

#include <stdexcept>
#include <type_traits>

#include "console/json.hpp"

namespace spool::console {
namespace {

// Every member of each struct, named once: the writer and the reader walk the same lists,
// so the two cannot disagree. docs/console.md documents each name.
template <class T, class V>
void fields(T& r, V& v) {
  using R = std::remove_const_t<T>;
  if constexpr (std::is_same_v<R, RuntimeInfo>) {
    v("flavor", r.flavor);
    v("pid", r.pid);
    v("uptime_ms", r.uptime_ms);
    v("live_tasks", r.live_tasks);
    v("inject_queue_depth", r.inject_queue_depth);
    v("blocking_threads", r.blocking_threads);
    v("idle_blocking_threads", r.idle_blocking_threads);
    v("blocking_queue_depth", r.blocking_queue_depth);
    v("timers_armed", r.timers_armed);
    v("timers_fired", r.timers_fired);
    v("io_events", r.io_events);
    v("io_registrations", r.io_registrations);
    v("io_backend", r.io_backend);
    v("dropped_snapshots", r.dropped_snapshots);
  } else if constexpr (std::is_same_v<R, WorkerInfo>) {
    v("polls", r.polls);
    v("steals", r.steals);
    v("parks", r.parks);
    v("local_queue_depth", r.local_queue_depth);
    v("state", r.state);
  } else if constexpr (std::is_same_v<R, LevelInfo>) {
    v("queued", r.queued);
    v("polled", r.polled);
    v("busy_ns", r.busy_ns);
    v("deadline_misses", r.deadline_misses);
    v("share", r.share);
  } else if constexpr (std::is_same_v<R, ChannelInfo>) {
    v("name", r.name);
    v("level", r.level);
    v("kind", r.kind);
    v("complete_on_close", r.complete_on_close);
    v("queued", r.queued);
    v("polled", r.polled);
    v("busy_ns", r.busy_ns);
    v("deadline_misses", r.deadline_misses);
    v("share", r.share);
  } else if constexpr (std::is_same_v<R, FrameInfo>) {
    v("file", r.file);
    v("line", r.line);
    v("function", r.function);
  } else if constexpr (std::is_same_v<R, BranchInfo>) {
    v("index", r.index);
    v("waiting_on", r.waiting_on);
    v("backtrace", r.backtrace);
    v("branches", r.branches);
    v("omitted_branches", r.omitted_branches);
  } else if constexpr (std::is_same_v<R, TaskInfo>) {
    v("id", r.id);
    v("name", r.name);
    v("channel", r.channel);
    v("file", r.file);
    v("line", r.line);
    v("state", r.state);
    v("cancel_requested", r.cancel_requested);
    v("polls", r.polls);
    v("wakes", r.wakes);
    v("self_wakes", r.self_wakes);
    v("busy_ns", r.busy_ns);
    v("scheduled_ns", r.scheduled_ns);
    v("idle_ns", r.idle_ns);
    v("longest_poll_ns", r.longest_poll_ns);
    v("poll_histogram", r.poll_histogram);
    v("wakers", r.wakers);
    v("waker_clones", r.waker_clones);
    v("waker_drops", r.waker_drops);
    v("waiting_on", r.waiting_on);
    v("backtrace", r.backtrace);
    v("branches", r.branches);
    v("omitted_branches", r.omitted_branches);
  } else if constexpr (std::is_same_v<R, Lint>) {
    v("kind", r.kind);
    v("task", r.task);
    v("channel", r.channel);
    v("message", r.message);
  } else {
    static_assert(std::is_same_v<R, Snapshot>);
    v("v", r.v);
    v("seq", r.seq);
    v("runtime", r.runtime);
    v("workers", r.workers);
    v("levels", r.levels);
    v("channels", r.channels);
    v("tasks", r.tasks);
    v("lints", r.lints);
  }
}

template <class T>
inline constexpr bool is_scalar_v =
    std::is_same_v<T, std::string> || std::is_same_v<T, std::uint64_t> || std::is_same_v<T, bool> ||
    std::is_same_v<T, double> || std::is_same_v<T, int>;

template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};

struct Writer {
  JsonWriter& w;

  template <class T>
  void operator()(std::string_view name, const T& field) {
    w.key(name);
    write(field);
  }
  template <class T>
  void operator()(std::string_view name, const std::optional<T>& field) {
    if (field) (*this)(name, *field);  // absent: not measured
  }

  template <class T>
  void write(const T& field) {
    if constexpr (is_scalar_v<T>) {
      w.value(field);
    } else if constexpr (IsVector<T>::value) {
      w.begin_array();
      for (const auto& e : field) write(e);
      w.end_array();
    } else {
      w.begin_object();
      fields(field, *this);
      w.end_object();
    }
  }
};

[[noreturn]] void bad(std::string_view name, const char* what) {
  throw std::invalid_argument("spool-console: snapshot member \"" + std::string(name) + "\" " +
                              what);
}

struct Reader {
  const JsonValue& obj;

  template <class T>
  void operator()(std::string_view name, T& field) {
    const JsonValue* v = obj.find(name);
    if (v == nullptr) bad(name, "is missing");
    read(name, *v, field);
  }
  template <class T>
  void operator()(std::string_view name, std::optional<T>& field) {
    const JsonValue* v = obj.find(name);
    if (v == nullptr || v->is_null()) {
      field.reset();
      return;
    }
    read(name, *v, field.emplace());
  }

  template <class T>
  static void read(std::string_view name, const JsonValue& v, T& field) {
    using K = JsonValue::Kind;
    if constexpr (std::is_same_v<T, std::string>) {
      if (v.kind != K::kString) bad(name, "is not a string");
      field = v.string;
    } else if constexpr (std::is_same_v<T, bool>) {
      if (v.kind != K::kBool) bad(name, "is not a boolean");
      field = v.boolean;
    } else if constexpr (std::is_same_v<T, double>) {
      if (v.kind != K::kNumber) bad(name, "is not a number");
      field = v.number;
    } else if constexpr (std::is_same_v<T, std::uint64_t> || std::is_same_v<T, int>) {
      if (v.kind != K::kNumber || !v.is_integer || v.integer < 0) {
        bad(name, "is not a non-negative integer");
      }
      field = static_cast<T>(v.integer);
    } else if constexpr (IsVector<T>::value) {
      if (v.kind != K::kArray) bad(name, "is not an array");
      field.clear();
      for (const JsonValue& e : v.array) read(name, e, field.emplace_back());
    } else {
      if (v.kind != K::kObject) bad(name, "is not an object");
      Reader inner{v};
      fields(field, inner);
    }
  }
};

}  // namespace

std::string to_json(const Snapshot& s) {
  JsonWriter w;
  Writer{w}.write(s);
  return std::move(w).take();
}

Snapshot snapshot_from_json(std::string_view line) {
  const JsonValue doc = parse_json(line);
  if (doc.kind != JsonValue::Kind::kObject) {
    throw std::invalid_argument("spool-console: a snapshot line is not a JSON object");
  }
  const JsonValue* v = doc.find("v");
  if (v == nullptr || !v->is_integer || v->integer != kProtocolVersion) {
    throw std::invalid_argument("spool-console: the snapshot's protocol version (\"v\") is not " +
                                std::to_string(kProtocolVersion) +
                                ": this spool-console and the runtime differ");
  }
  Snapshot s;
  Reader{doc}.read("snapshot", doc, s);
  return s;
}

}  // namespace spool::console
