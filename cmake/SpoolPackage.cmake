# The Debian packages, made by CPack's DEB generator from the install components
# (cmake/SpoolInstall.cmake); scripts/package configures a shared build for it and runs cpack.
#  - libspool<N> (component runtime): libspool.so.<N>, N = SPOOL_ABI_VERSION (version.hpp), so
#    that two ABIs install side by side (docs/compatibility.md);
#  - libspool-dev (component dev): headers, libspool.a, the libspool.so link, the CMake package
#    and spool.pc; it needs the same version of libspool<N>, and liburing-dev for the static
#    library's link.
set(CPACK_PACKAGE_NAME spool)
set(CPACK_PACKAGE_VENDOR "spool")
set(CPACK_PACKAGE_CONTACT "spool maintainers <spool@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libspool${SPOOL_ABI_VERSION})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)  # libc6, libstdc++6, liburing2, as dpkg finds
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libspool-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libspool${SPOOL_ABI_VERSION} (= ${PROJECT_VERSION}), liburing-dev")
if(TARGET spool_tls)  # libspool_tls.a: find_package(spool COMPONENTS tls) needs OpenSSL 3's
  set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "libssl-dev (>= 3)")  # headers and libraries
endif()
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "spool, a C++20 async runtime: the shared library")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "spool, a C++20 async runtime: headers, static library, CMake and pkg-config files")
include(CPack)
