// spool::tls: TLS streams on OpenSSL 3 (link spool::tls; docs/tls.md). Not part of
// spool/spool.hpp: the core library never needs OpenSSL.
#pragma once

#include "spool/tls/connector.hpp"
#include "spool/tls/context.hpp"
#include "spool/tls/error.hpp"
#include "spool/tls/stream.hpp"
