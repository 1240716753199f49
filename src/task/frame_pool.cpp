// Recycling of Task frame memory (TaskPromiseBase::operator new). One thread spawning while
// others free makes glibc's malloc contend on the spawner's arena lock, so frames go through
// magazines (Bonwick): per thread and size class, a loaded and a previous list of up to
// kBatch frames; full or empty ones are swapped with a capped global depot in O(1), one lock
// per kBatch frames. Past the cap, and above the largest class, memory goes back to malloc.
#include <pthread.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <utility>

#include "spool/core/task.hpp"
#include "task/frame_pool.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define SPOOL_FRAME_POOL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPOOL_FRAME_POOL 0
#endif
#endif
#ifndef SPOOL_FRAME_POOL
// Under AddressSanitizer frames go straight to malloc, so that a use after free of a frame
// is still caught (recycled memory is not poisoned). ThreadSanitizer builds keep the pool,
// so that its hand-offs between threads are checked.
#define SPOOL_FRAME_POOL 1
#endif

namespace spool::detail {

namespace {

constexpr std::size_t kClasses = 24;  // frames of up to 24 * 64 = 1536 bytes, prefix included
constexpr std::size_t kBatch = 64;
// The depot keeps at most this many bytes of frames, all classes together (what a burst of
// spawns leaves behind once it is over), and of one class (so that one burst cannot fill it
// for every other size): enough for the next burst of the same size to reuse it all (W9's
// 10,000 tasks of 512 bytes are 5 MB).
constexpr std::size_t kDepotBytes = std::size_t{16} << 20;
constexpr std::size_t kDepotBytesPerClass = std::size_t{8} << 20;
constexpr std::size_t batch_bytes(std::size_t c) noexcept { return kBatch * c * kFrameGranule; }

// A free frame links the next one of its magazine; the first frame of a full magazine in
// the depot also links the depot's next magazine of its class (every frame holds both).
struct FreeFrame {
  FreeFrame* next;
  FreeFrame* next_batch;
};

std::size_t class_of(std::size_t bytes) noexcept {
  return (bytes + kFrameGranule - 1) / kFrameGranule;
}

// The depot: full magazines (lists of exactly kBatch frames) per class, shared by all
// threads, each class a stack of them.
class GlobalPool {
 public:
  // A batch (a list of kBatch frames) for class `c`, or null.
  FreeFrame* take(std::size_t c) noexcept {
    std::lock_guard lock(mutex_);
    FreeFrame* b = full_[c];
    if (b == nullptr) return nullptr;
    full_[c] = b->next_batch;
    bytes_ -= batch_bytes(c);
    class_bytes_[c] -= batch_bytes(c);
    return b;
  }
  // Keeps a batch, or frees it when the depot is full.
  void give(std::size_t c, FreeFrame* batch) noexcept {
    {
      std::lock_guard lock(mutex_);
      if (bytes_ + batch_bytes(c) <= kDepotBytes &&
          class_bytes_[c] + batch_bytes(c) <= kDepotBytesPerClass) {
        batch->next_batch = full_[c];
        full_[c] = batch;
        bytes_ += batch_bytes(c);
        class_bytes_[c] += batch_bytes(c);
        return;
      }
    }
    free_list(batch);
  }

  static void free_list(FreeFrame* f) noexcept {
    while (f) ::operator delete(static_cast<void*>(std::exchange(f, f->next)));
  }

 private:
  std::mutex mutex_;
  FreeFrame* full_[kClasses + 1] = {};          // guarded by mutex_
  std::size_t bytes_ = 0;                       // what full_ holds; guarded by mutex_
  std::size_t class_bytes_[kClasses + 1] = {};  // of each class; guarded by mutex_
};

// Never destroyed: threads still running at exit (or static objects destroyed after a
// thread's cache) may still hand frames to it. What it holds stays reachable, so leak
// checkers do not report it.
GlobalPool& global_pool() {
  static GlobalPool* pool = new GlobalPool;
  return *pool;
}

// One thread's magazines, touched only by its thread. Constant-initialised and trivially
// destructible, so the fast paths read it without a thread_local guard and it stays readable
// to the very end of the thread. Every magazine starts (and ends, after the thread's exit)
// "empty and full" (no frame, count kBatch), which sends both fast paths to their slow
// path: that is where a thread's first use registers the exit cleanup and where a use after
// the cleanup goes straight to operator new/delete (valid for every frame: each pooled
// frame is its own operator new block).
struct Magazine {
  FreeFrame* head = nullptr;
  std::size_t count = kBatch;
};
struct ClassCache {
  Magazine loaded;
  Magazine previous;
};
enum class CacheLife : std::uint8_t { kUnused, kLive, kGone };
struct ThreadCache {
  ClassCache classes[kClasses + 1];
  CacheLife life = CacheLife::kUnused;
};
constinit thread_local ThreadCache cache;

void release_cache() noexcept {
  for (ClassCache& k : cache.classes) {
    GlobalPool::free_list(k.loaded.head);
    GlobalPool::free_list(k.previous.head);
    k = ClassCache{};
  }
  cache.life = CacheLife::kGone;
}

// The thread-exit cleanup is a pthread key's destructor, not a thread_local's: key
// destructors run after every thread_local destructor (which may still free frames), and
// again for a key set during that phase, so a frame freed by a later key destructor is
// returned too. (The main thread runs none at exit(): its frames stay reachable from its
// cache until the process ends.)
//
// Whether the cache may be used: registers the cleanup on the thread's first call (false,
// and nothing cached, if it cannot be registered).
bool cache_usable() noexcept {
  if (cache.life == CacheLife::kUnused) {
    static pthread_key_t exit_key;
    static const bool key_made = pthread_key_create(&exit_key, [](void*) { release_cache(); }) == 0;
    if (!key_made || pthread_setspecific(exit_key, &cache) != 0) return false;
    for (ClassCache& k : cache.classes) k.loaded.count = k.previous.count = 0;
    cache.life = CacheLife::kLive;
  }
  return cache.life == CacheLife::kLive;
}

[[gnu::noinline]] void* refill_and_allocate(std::size_t c, std::uint16_t& size_class) {
  ClassCache& k = cache.classes[c];
  if (cache_usable()) {
    if (k.previous.head != nullptr) {
      std::swap(k.loaded, k.previous);
    } else if (FreeFrame* batch = global_pool().take(c)) {
      k.loaded = Magazine{batch, kBatch};
    }
  }
  size_class = static_cast<std::uint16_t>(c);  // a block of the class's size either way
  FreeFrame* f = k.loaded.head;
  if (f == nullptr) return ::operator new(c* kFrameGranule);
  k.loaded.head = f->next;
  --k.loaded.count;
  return f;
}

[[gnu::noinline]] void make_room_and_deallocate(void* p, std::size_t c) noexcept {
  ClassCache& k = cache.classes[c];
  if (!cache_usable()) {
    ::operator delete(p);
    return;
  }
  if (k.loaded.count == kBatch) {
    if (k.previous.count == kBatch) {
      global_pool().give(c, k.previous.head);  // a full magazine, exactly kBatch frames
      k.previous = Magazine{nullptr, 0};
    }
    std::swap(k.loaded, k.previous);
  }
  k.loaded.head = ::new (p) FreeFrame{k.loaded.head, nullptr};
  ++k.loaded.count;
}

}  // namespace

void* allocate_frame(std::size_t bytes, std::uint16_t& size_class) {
  const std::size_t c = class_of(bytes);
  if (!SPOOL_FRAME_POOL || c > kClasses) {
    size_class = 0;
    return ::operator new(bytes);
  }
  Magazine& m = cache.classes[c].loaded;
  FreeFrame* f = m.head;
  if (f == nullptr) [[unlikely]]
    return refill_and_allocate(c, size_class);
  size_class = static_cast<std::uint16_t>(c);
  m.head = f->next;
  --m.count;
  // Frames come back from the threads that ran them: the next one is likely in another
  // core's cache. Start fetching it (for writing) now, so that the next spawn does not
  // stall on it.
  if (m.head) __builtin_prefetch(m.head, 1);
  return f;
}

void deallocate_frame(void* p, std::uint16_t size_class) noexcept {
  if (size_class == 0) {
    ::operator delete(p);
    return;
  }
  Magazine& m = cache.classes[size_class].loaded;
  if (m.count == kBatch) [[unlikely]] {
    make_room_and_deallocate(p, size_class);
    return;
  }
  m.head = ::new (p) FreeFrame{m.head, nullptr};
  ++m.count;
}

}  // namespace spool::detail
