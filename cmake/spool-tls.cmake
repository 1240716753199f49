# find_package(spool COMPONENTS tls): spool::tls (installed when spool was built with it),
# and what it links, OpenSSL 3.
include(CMakeFindDependencyMacro)
find_dependency(OpenSSL 3)
include("${CMAKE_CURRENT_LIST_DIR}/spoolTlsTargets.cmake")
set(spool_tls_FOUND TRUE)
