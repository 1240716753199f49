// spool::tls::TlsConnector and TlsAcceptor: the client and server handshakes, as futures.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "spool/tls/connection.hpp"
#include "spool/tls/context.hpp"
#include "spool/tls/error.hpp"
#include "spool/tls/stream.hpp"

namespace spool::tls {

/// The future of a handshake: ready with the TlsStream once it is done; throws TlsError
/// when it fails (TlsErrc::kVerifyFailed naming the failed check and the expected host,
/// kHandshake with OpenSSL's reason, kUnexpectedEof when the transport ends first), or the
/// transport's std::system_error. The alert that tells the peer why is sent if the transport
/// takes it at once. Dropping it closes the transport and frees everything.
template <ByteStream S>
class Handshake {
 public:
  /// The handshake of `ctx`'s role over `transport` (see TlsConnector::connect).
  Handshake(const TlsContext& ctx, const std::string& server_name, S transport)
      : c_(std::make_shared<detail::Connection<S>>(ctx, server_name, std::move(transport))) {}
  /// Ready with the stream once the handshake is done.
  Poll<TlsStream<S>> poll(Context& cx) {
    if (!c_) throw std::logic_error("spool::tls::Handshake polled after it completed");
    detail::Connection<S>& c = *c_;
    try {
      for (;;) {
        if (!c.poll_flush(cx, detail::Side::kReader)) return pending;
        if (c.engine.handshake()) {
          if (c.engine.has_output()) continue;  // the last flight (a server's tickets)
          return TlsStream<S>(std::move(c_));
        }
        if (c.engine.has_output()) continue;
        if (!c.poll_fill(cx)) return pending;
      }
    } catch (const TlsError&) {
      // The alert OpenSSL queued goes out if the transport takes it now (the handshake's
      // own error is the one to report).
      c_->flush_quietly(cx, detail::Side::kReader);
      throw;
    }
  }

 private:
  std::shared_ptr<detail::Connection<S>> c_;
};

namespace detail {
/// `ctx`, when its role is `role`; else throws std::invalid_argument saying `refusal`.
inline TlsContext require_role(TlsContext ctx, Role role, const char* refusal) {
  if (ctx.role() != role) throw std::invalid_argument(refusal);
  return ctx;
}
}  // namespace detail

/// Makes client connections from a client TlsContext. Copyable, thread-safe.
class TlsConnector {
 public:
  /// Throws std::invalid_argument unless `ctx` is a client context.
  explicit TlsConnector(TlsContext ctx)
      : ctx_(detail::require_role(std::move(ctx), Role::kClient,
                                  "spool::tls::TlsConnector: the context is a server's; build it "
                                  "with TlsContextBuilder(Role::kClient)")) {}
  /// The client handshake over `stream`: sends `server_name` as SNI (unless it is an IP
  /// address) and, when the context verifies (Verify::kPeer), requires the server's
  /// certificate to name it. `co_await connector.connect("localhost", std::move(tcp))`.
  /// Throws std::invalid_argument, before anything is sent, for a name with a NUL byte
  /// (OpenSSL would check only the part before it) or, when verifying, an empty one.
  template <ByteStream S>
  Handshake<S> connect(std::string_view server_name, S stream) const {
    return Handshake<S>(ctx_, std::string(server_name), std::move(stream));
  }
  /// The context.
  const TlsContext& context() const noexcept { return ctx_; }

 private:
  TlsContext ctx_;
};

/// Makes server connections from a server TlsContext. Copyable, thread-safe.
class TlsAcceptor {
 public:
  /// Throws std::invalid_argument unless `ctx` is a server context.
  explicit TlsAcceptor(TlsContext ctx)
      : ctx_(detail::require_role(std::move(ctx), Role::kServer,
                                  "spool::tls::TlsAcceptor: the context is a client's; build it "
                                  "with TlsContextBuilder(Role::kServer)")) {}
  /// The server handshake over `stream` (an accepted connection).
  template <ByteStream S>
  Handshake<S> accept(S stream) const {
    return Handshake<S>(ctx_, std::string(), std::move(stream));
  }
  /// The context.
  const TlsContext& context() const noexcept { return ctx_; }

 private:
  TlsContext ctx_;
};

}  // namespace spool::tls
