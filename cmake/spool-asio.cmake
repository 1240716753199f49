# find_package(spool COMPONENTS asio): spool::asio (installed when spool was built with it)
# and what it needs, Boost.Asio 1.77 or later (headers only). Without Boost only this
# component is not found, as cmake/spool-tls.cmake does for OpenSSL.
find_package(Boost 1.77 CONFIG QUIET COMPONENTS headers)
if(NOT Boost_FOUND)
  set(spool_asio_NOT_FOUND_MESSAGE
      "spool::asio needs Boost.Asio 1.77 or later, which was not found (Debian: apt install "
      "libboost1.81-dev)")
  return()
endif()
include("${CMAKE_CURRENT_LIST_DIR}/spoolAsioTargets.cmake")
set(spool_asio_FOUND TRUE)
