// spool::tls's errors: std::system_error in the TLS category, with OpenSSL's reason.
#pragma once

#include <string>
#include <system_error>

#include "spool/config.hpp"

namespace spool::tls {

/// What went wrong, as the error code's value in tls::category().
enum class TlsErrc {
  kConfig = 1,     ///< a certificate, key, CA or setting was refused while building a context
  kVerifyFailed,   ///< the peer's certificate failed verification (expired, wrong host...)
  kHandshake,      ///< the handshake failed otherwise (protocol mismatch, alert, no cert)
  kProtocol,       ///< a record or alert after the handshake broke the connection
  kUnexpectedEof,  ///< the transport ended without the peer's close_notify
  kClosed,         ///< a write after this side sent close_notify (shutdown)
};

/// The category of spool::tls's errors ("spool.tls").
const std::error_category& category() noexcept;

/// Makes TlsErrc values std::error_codes in tls::category().
inline std::error_code make_error_code(TlsErrc e) noexcept {
  return {static_cast<int>(e), category()};
}

/// The exception of every TLS failure: a std::system_error whose code is a TlsErrc and whose
/// message says what failed, with OpenSSL's reasons and, for a verification failure, the
/// check that failed (X509_verify_cert_error_string) and the name that was expected.
class TlsError : public std::system_error {
 public:
  /// `verify_result` is OpenSSL's X509_V_* code (0, X509_V_OK, when no verification failed).
  TlsError(TlsErrc code, const std::string& what, long verify_result = 0)
      : std::system_error(make_error_code(code), what), verify_result_(verify_result) {}
  /// OpenSSL's X509_V_* code of a failed verification (X509_V_ERR_CERT_HAS_EXPIRED...), else 0.
  long verify_result() const noexcept { return verify_result_; }

 private:
  long verify_result_;
};

}  // namespace spool::tls

namespace std {
/// TlsErrc compares with std::error_code (`e.code() == spool::tls::TlsErrc::kVerifyFailed`).
template <>
struct is_error_code_enum<spool::tls::TlsErrc> : true_type {};
}  // namespace std
