// OpenSSL's thread-local error queue, read into spool::tls's messages.
#pragma once

#include <string>

#include "spool/tls/error.hpp"

namespace spool::tls::detail {

/// Empties this thread's OpenSSL error queue and gives its reasons, joined by "; "
/// ("SSL routines: certificate verify failed"); `fallback` when it was empty.
std::string take_openssl_reasons(const char* fallback = "no reason given by OpenSSL");

/// Throws TlsError(kConfig) saying "<what>: <OpenSSL's reasons>".
[[noreturn]] void throw_config_error(const std::string& what);

}  // namespace spool::tls::detail
