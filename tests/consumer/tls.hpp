// The consumer's TLS part, built where spool::tls is found (tests/consumer/CMakeLists.txt).
#pragma once

/// Makes a client context and its connector; throws spool::tls::TlsError if that fails.
void make_tls_connector();
