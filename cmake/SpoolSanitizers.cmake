# SPOOL_SANITIZE selects one sanitizer build for the whole tree (the presets set it):
#   address   ASan + UBSan (+ LSan, which ASan enables on Linux)
#   thread    ThreadSanitizer
# The flags go on every target, the library included, so that a sanitizer sees all code.
set(SPOOL_SANITIZE "" CACHE STRING "Sanitizer build: '', 'address' or 'thread'")
set_property(CACHE SPOOL_SANITIZE PROPERTY STRINGS "" address thread)

if(SPOOL_SANITIZE STREQUAL "address")
  set(_spool_san -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    # clang 14's -fsanitize=function (part of 'undefined') emits prologue data that the
    # assembler rejects ("Cannot represent a difference across sections") for coroutine
    # frames whose future has a member with a non-trivial destructor.
    list(APPEND _spool_san -fno-sanitize=function)
  endif()
elseif(SPOOL_SANITIZE STREQUAL "thread")
  set(_spool_san -fsanitize=thread -fno-omit-frame-pointer)
elseif(NOT SPOOL_SANITIZE STREQUAL "")
  message(FATAL_ERROR "SPOOL_SANITIZE='${SPOOL_SANITIZE}' is not known: use '', 'address' or 'thread'")
endif()
if(DEFINED _spool_san)
  add_compile_options(${_spool_san})
  add_link_options(${_spool_san})
endif()
