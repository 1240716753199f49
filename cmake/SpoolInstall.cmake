# install() rules, the exported CMake package and the pkg-config file: after `cmake --install`,
# a separate project can use find_package(spool CONFIG REQUIRED) and link spool::spool (the
# shared library when the install has one) or spool::spool_static (and, with COMPONENTS tls,
# spool::tls or spool::tls_static), or ask `pkg-config --cflags --libs spool`. Two components,
# the Debian packages' split (cmake/SpoolPackage.cmake): `runtime` is libspool.so.N, `dev`
# everything else.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# spool_static is libspool.a, or another name of it (an INTERFACE target) without SPOOL_SHARED.
install(TARGETS spool spool_static EXPORT spoolTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
# The TLS headers go with spool::tls: without its library they could only fail to link.
set(spool_header_excludes "")
if(NOT TARGET spool_tls)
  set(spool_header_excludes PATTERN tls EXCLUDE PATTERN tls.hpp EXCLUDE)
endif()
install(DIRECTORY include/spool DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
        ${spool_header_excludes})
install(EXPORT spoolTargets NAMESPACE spool::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spool COMPONENT dev)
# spool::tls, when built: the component "tls" (cmake/spool-tls.cmake finds OpenSSL for it).
if(TARGET spool_tls)
  set_target_properties(spool_tls PROPERTIES EXPORT_NAME tls)
  set_target_properties(spool_tls_static PROPERTIES EXPORT_NAME tls_static)
  install(TARGETS spool_tls spool_tls_static EXPORT spoolTlsTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
  install(EXPORT spoolTlsTargets NAMESPACE spool::
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spool COMPONENT dev)
  install(FILES cmake/spool-tls.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spool COMPONENT dev)
endif()

configure_package_config_file(cmake/spoolConfig.cmake.in
  ${PROJECT_BINARY_DIR}/spoolConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spool)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/spoolConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/spoolConfig.cmake ${PROJECT_BINARY_DIR}/spoolConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spool COMPONENT dev)

# spool.pc: -lspool finds libspool.so where there is one, libspool.a otherwise; liburing is
# needed only to link the static library (`pkg-config --static`).
set(spool_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH SPOOL_PC_PREFIX_FROM_PCFILEDIR "/root/${spool_pc_dir}" "/root")
string(REGEX REPLACE "/$" "" SPOOL_PC_PREFIX_FROM_PCFILEDIR "${SPOOL_PC_PREFIX_FROM_PCFILEDIR}")
set(SPOOL_PC_LIBS_PRIVATE "")
if(SPOOL_HAVE_LIBURING)
  set(SPOOL_PC_LIBS_PRIVATE "-luring")
endif()
configure_file(cmake/spool.pc.in ${PROJECT_BINARY_DIR}/spool.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/spool.pc DESTINATION ${spool_pc_dir} COMPONENT dev)
