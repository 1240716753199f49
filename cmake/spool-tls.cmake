# find_package(spool COMPONENTS tls): spool::tls and spool::tls_static (installed when spool was
# built with them), and what they link, OpenSSL 3. Without OpenSSL only this component is not
# found (find_dependency would fail the whole package: OPTIONAL_COMPONENTS tls lost spool too).
find_package(OpenSSL 3 QUIET)
if(NOT OpenSSL_FOUND)
  set(spool_tls_NOT_FOUND_MESSAGE
      "spool::tls needs OpenSSL 3, which was not found (Debian: apt install libssl-dev)")
  return()
endif()
include("${CMAKE_CURRENT_LIST_DIR}/spoolTlsTargets.cmake")
set(spool_tls_FOUND TRUE)
