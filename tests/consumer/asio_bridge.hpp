// The consumer's Asio part, built where spool::asio is found (tests/consumer/CMakeLists.txt).
#pragma once

/// Awaits an Asio timer through spool::asio::use_task, with spool::asio::drive running the
/// io_context on this thread; true once the wait completed.
bool wait_for_an_asio_timer();
