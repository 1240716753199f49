// Attachment: a service that runs beside a runtime and stops during its shutdown (the
// console's server, a layer above: it reaches the runtime only through the public API).
#pragma once

namespace spool::detail {

// Owned by the runtime from RuntimeShared::attach until the shutdown destroys it, after the
// drain of complete-on-close channels (so a drain that hangs can still be looked at) and
// before the tasks are cancelled. Its destructor stops it and must not wait for the runtime.
class Attachment {
 public:
  virtual ~Attachment() = default;
};

}  // namespace spool::detail
