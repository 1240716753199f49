// spool's I/O on any descriptor: AsyncFd.
#pragma once

#include "spool/io/async_fd.hpp"
