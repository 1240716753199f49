// spool::tls::detail::Engine: one connection's OpenSSL state between two memory buffers. It
// never touches a descriptor: TlsStream<S> moves its ciphertext to and from the transport S
// with S's own futures, so nothing blocks and any spool byte stream can carry it.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "spool/config.hpp"
#include "spool/tls/context.hpp"

struct ssl_st;  // OpenSSL's SSL
struct bio_st;  // OpenSSL's BIO

namespace spool::tls::detail {

/// An SSL object whose network side is two memory BIOs: `input_space` / `input_received`
/// feed it the transport's bytes, `output` / `output_sent` take what it has to send. Not
/// thread-safe (TlsStream locks around it). Every failure throws TlsError.
class Engine {
 public:
  /// Ciphertext read from the transport per read (a whole maximal record and its header).
  static constexpr std::size_t kInputSize = 17 * 1024;
  /// Ciphertext handed to the transport per write.
  static constexpr std::size_t kOutputSize = 32 * 1024;

  /// A connection of `ctx`'s role. A client sends `server_name` as SNI and, unless `ctx`
  /// verifies nothing, checks that the server's certificate names it; a server passes "".
  /// Throws std::invalid_argument for a name with a NUL byte, or an empty one when verifying.
  Engine(const TlsContext& ctx, const std::string& server_name);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Advances the handshake: true once done, false when it needs the peer's bytes (after
  /// sending output()). Throws when it failed, or when the transport ended.
  bool handshake();
  /// Decrypts into [data, data + len): the count; 0 once the peer's close_notify came;
  /// nullopt when it needs the peer's bytes. Throws TlsErrc::kUnexpectedEof when the
  /// transport ended without close_notify.
  std::optional<std::size_t> read(std::byte* data, std::size_t len);
  /// Encrypts up to one record of [data, data + len) into the output: the count taken.
  std::size_t write(const std::byte* data, std::size_t len);
  /// Queues close_notify (once): the peer reads the end of the stream after what was sent.
  void close_notify();

  /// Where the transport's next bytes go (then call input_received).
  std::span<std::byte> input_space() noexcept { return {input_, kInputSize}; }
  /// `n` bytes arrived in input_space(); 0: the transport ended.
  void input_received(std::size_t n);
  /// The ciphertext waiting to be sent (empty: none).
  std::span<const std::byte> output();
  /// The transport took the first `n` bytes of output().
  void output_sent(std::size_t n) noexcept { output_begin_ += n; }
  /// True while output() has bytes (without moving any out of OpenSSL).
  bool has_output() const noexcept;

  /// The ALPN protocol agreed on ("" for none).
  std::string_view alpn_protocol() const noexcept;
  /// The protocol version agreed on ("TLSv1.3").
  std::string_view version() const noexcept;
  /// The SNI name the client sent (a server's view; "" for none).
  std::string_view server_name() const noexcept;
  /// The OpenSSL SSL object.
  ssl_st* native_handle() const noexcept { return ssl_; }

 private:
  // Throws the TlsError of a failed SSL call whose SSL_get_error was `err`; `during` says
  // what was being done ("handshake").
  [[noreturn]] void throw_failure(int err, const char* during);
  [[noreturn]] void throw_unexpected_eof(const char* during);

  ssl_st* ssl_;
  bio_st* network_in_;         // the transport's bytes, for OpenSSL to read (owned by ssl_)
  bio_st* network_out_;        // OpenSSL's bytes for the transport (owned by ssl_)
  std::string expected_host_;  // a verifying client's server name, for errors
  bool client_;
  bool transport_ended_ = false;
  bool close_notify_sent_ = false;
  std::size_t output_begin_ = 0;  // output_[output_begin_, output_end_) waits to be sent
  std::size_t output_end_ = 0;
  std::byte input_[kInputSize];
  std::byte output_[kOutputSize];
};

}  // namespace spool::tls::detail
