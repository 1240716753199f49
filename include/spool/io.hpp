// spool's I/O on any descriptor: AsyncFd, pipes (and io::Duplex, two of them as one
// stream), and the process's stdin / stdout / stderr.
#pragma once

#include "spool/io/async_fd.hpp"
#include "spool/io/duplex.hpp"
#include "spool/io/pipe.hpp"
#include "spool/io/stdio.hpp"
