// spool::tls's error category and OpenSSL's error queue.
#include "tls/openssl_errors.hpp"

#include <openssl/err.h>

namespace spool::tls {

namespace {

class TlsCategory : public std::error_category {
 public:
  const char* name() const noexcept override { return "spool.tls"; }
  std::string message(int code) const override {
    switch (static_cast<TlsErrc>(code)) {
      case TlsErrc::kConfig:
        return "TLS configuration refused";
      case TlsErrc::kVerifyFailed:
        return "TLS certificate verification failed";
      case TlsErrc::kHandshake:
        return "TLS handshake failed";
      case TlsErrc::kProtocol:
        return "TLS protocol error";
      case TlsErrc::kUnexpectedEof:
        return "TLS peer closed the connection without close_notify";
      case TlsErrc::kClosed:
        return "TLS write after close_notify";
    }
    return "unknown TLS error";
  }
};

}  // namespace

const std::error_category& category() noexcept {
  static const TlsCategory instance;
  return instance;
}

namespace detail {

std::string take_openssl_reasons(const char* fallback) {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    if (!out.empty()) out += "; ";
    const char* lib = ERR_lib_error_string(e);
    const char* reason = ERR_reason_error_string(e);
    if (lib != nullptr) (out += lib) += ": ";
    out += reason != nullptr ? reason : "error " + std::to_string(ERR_GET_REASON(e));
  }
  return out.empty() ? fallback : out;
}

void throw_config_error(const std::string& what) {
  throw TlsError(TlsErrc::kConfig, "spool::tls: " + what + ": " + take_openssl_reasons());
}

}  // namespace detail

}  // namespace spool::tls
