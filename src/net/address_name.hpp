// The name of a socket address in error messages (defined in net/io_source.cpp).
#pragma once

#include <sys/socket.h>

#include <string>

namespace spool::detail {

// "127.0.0.1:80", "[::1]:80", a Unix path ("unnamed" for none), or "?" for another family.
std::string address_name(const sockaddr_storage& ss, socklen_t len);

}  // namespace spool::detail
