# The Debian packages, made by CPack's DEB generator from the install components
# (cmake/SpoolInstall.cmake); scripts/package configures a shared build for it and runs cpack.
#  - libspool<N> (component runtime): libspool.so.<N>, N = SPOOL_ABI_VERSION (version.hpp), so
#    that two ABIs install side by side (docs/compatibility.md); Depends from dpkg-shlibdeps,
#    and a shlibs file, so that a package of a program linked with it gets its Depends too;
#  - libspool-dev (component dev): headers, libspool.a, the libspool.so link, the CMake package
#    and spool.pc; it needs the same version of libspool<N>, and liburing-dev when spool was
#    built with io_uring (libspool.a links it).
set(spool_runtime_package libspool${SPOOL_ABI_VERSION})
set(CPACK_PACKAGE_NAME spool)
set(CPACK_PACKAGE_VENDOR "spool")
set(CPACK_PACKAGE_CONTACT "spool maintainers <spool@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${spool_runtime_package})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)  # libc6, libstdc++6, liburing2, as dpkg finds
# shlibs: "libspool N libspoolN (>= version)": the ABI is the SONAME's N and the package's name,
# so any later version of the same package will do.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libspool-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${spool_runtime_package} (= ${PROJECT_VERSION})")
if(SPOOL_HAVE_LIBURING)
  string(APPEND CPACK_DEBIAN_DEV_PACKAGE_DEPENDS ", liburing-dev")
endif()
# find_package(spool COMPONENTS tls) needs OpenSSL 3's headers and libraries, and COMPONENTS
# asio Boost.Asio's headers (1.77 or later).
set(spool_dev_recommends "")
if(TARGET spool_tls)
  list(APPEND spool_dev_recommends "libssl-dev (>= 3)")
endif()
if(TARGET spool_asio)
  list(APPEND spool_dev_recommends "libboost1.81-dev | libboost-dev (>= 1.77)")
endif()
list(JOIN spool_dev_recommends ", " CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS)
# Each package's own summary (the first line) and description. CPack puts
# CPACK_PACKAGE_DESCRIPTION_SUMMARY before both unless it is CPack's default, so it is that.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CMAKE_PROJECT_NAME} built using CMake")
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "C++20 async runtime: shared library
spool runs C++20 coroutines on a work-stealing scheduler with priority levels,
timers, TCP/UDP/Unix sockets on epoll or io_uring, files, processes, channels and
sync primitives. This package holds the shared library libspool.so.${SPOOL_ABI_VERSION}.")
set(CPACK_DEBIAN_DEV_DESCRIPTION "C++20 async runtime: development files
spool runs C++20 coroutines on a work-stealing scheduler with priority levels,
timers, TCP/UDP/Unix sockets on epoll or io_uring, files, processes, channels and
sync primitives. This package holds the headers, the static library libspool.a,
the CMake package (find_package(spool)) and spool.pc for pkg-config.")
# Debian's copyright file, in each package only (a plain install leaves it out).
install(FILES cmake/debian/copyright DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${spool_runtime_package}
        COMPONENT runtime EXCLUDE_FROM_ALL)
install(FILES cmake/debian/copyright DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/libspool-dev
        COMPONENT dev EXCLUDE_FROM_ALL)
include(CPack)
