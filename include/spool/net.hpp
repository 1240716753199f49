// spool's networking: socket addresses, TCP listeners and streams.
#pragma once

#include "spool/net/io_error.hpp"
#include "spool/net/socket_addr.hpp"
#include "spool/net/stream_ops.hpp"
#include "spool/net/tcp.hpp"
