// spool's networking: socket addresses, TCP, UDP and Unix-domain sockets.
#pragma once

#include "spool/net/buffered.hpp"
#include "spool/net/copy.hpp"
#include "spool/net/datagram_ops.hpp"
#include "spool/net/io_error.hpp"
#include "spool/net/lookup.hpp"
#include "spool/net/socket_addr.hpp"
#include "spool/net/stream_ops.hpp"
#include "spool/net/tcp.hpp"
#include "spool/net/tcp_socket.hpp"
#include "spool/net/udp.hpp"
#include "spool/net/unix.hpp"
#include "spool/net/unix_datagram.hpp"
