// spool's I/O on any descriptor: AsyncFd and pipes.
#pragma once

#include "spool/io/async_fd.hpp"
#include "spool/io/pipe.hpp"
