// Build-wide settings every public header sees first: the refusal of builds without
// exceptions, and SPOOL_API, the mark of what libspool.so exports.
#pragma once

// spool reports errors by throwing (JoinError, std::system_error, misuse messages), and a
// Task carries its coroutine's exception to the awaiter: without exceptions none of that works.
#if !defined(__cpp_exceptions) && !defined(__EXCEPTIONS)
#error \
    "spool needs C++ exceptions: its API reports errors by throwing. Remove -fno-exceptions for the code that includes spool."
#endif

/// Marks a class, function or inline variable that libspool.so exports (an inline variable
/// that both the library and users' inline code touch needs it to be one variable). The shared
/// build compiles spool with -fvisibility=hidden (-DSPOOL_SHARED=ON), so only what carries
/// SPOOL_API is linkable from outside; the static build exports everything and the mark costs
/// nothing. On ELF the same attribute serves the library's build and its users', so there is no
/// import/export switch.
#define SPOOL_API __attribute__((visibility("default")))
