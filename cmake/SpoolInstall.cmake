# install() rules, the exported CMake package and the pkg-config file: after `cmake --install`,
# a separate project can use find_package(spool CONFIG REQUIRED) and link spool::spool (the
# shared library when the install has one) or spool::spool_static (and, with COMPONENTS tls,
# spool::tls or spool::tls_static; with COMPONENTS asio, spool::asio), or ask
# `pkg-config --cflags --libs spool`. Two components,
# the Debian packages' split (cmake/SpoolPackage.cmake): `runtime` is libspool.so.N, `dev`
# everything else.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# spool_static is libspool.a, or another name of it (an INTERFACE target) without SPOOL_SHARED.
install(TARGETS spool spool_static EXPORT spoolTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
# The TLS headers go with spool::tls: without its library they could only fail to link. So
# do the Asio bridge's with spool::asio.
set(spool_header_excludes "")
if(NOT TARGET spool_tls)
  list(APPEND spool_header_excludes PATTERN tls EXCLUDE PATTERN tls.hpp EXCLUDE)
endif()
if(NOT TARGET spool_asio)
  list(APPEND spool_header_excludes PATTERN asio EXCLUDE PATTERN asio.hpp EXCLUDE)
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
# spool::asio, when built: the component "asio" (cmake/spool-asio.cmake finds Boost for it).
if(TARGET spool_asio)
  set_target_properties(spool_asio PROPERTIES EXPORT_NAME asio)
  install(TARGETS spool_asio EXPORT spoolAsioTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
  install(EXPORT spoolAsioTargets NAMESPACE spool::
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spool COMPONENT dev)
  install(FILES cmake/spool-asio.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spool
          COMPONENT dev)
endif()

configure_package_config_file(cmake/spoolConfig.cmake.in
  ${PROJECT_BINARY_DIR}/spoolConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spool)
# docs/compatibility.md: before 1.0 a MINOR release may break the API, from 1.0 on only a MAJOR.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(spool_compatibility SameMinorVersion)
else()
  set(spool_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/spoolConfigVersion.cmake
  COMPATIBILITY ${spool_compatibility})
install(FILES ${PROJECT_BINARY_DIR}/spoolConfig.cmake ${PROJECT_BINARY_DIR}/spoolConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spool COMPONENT dev)

# spool.pc, written at install time (cmake/spool-pc-install.cmake.in). -lspool finds libspool.so
# where the install has one, and libspool.a otherwise, which needs liburing (liburing-dev ships
# liburing.pc): a public requirement then, a private one beside the shared library.
# spool_pc_dir(var prefix dir): <prefix>/dir, or dir when GNUInstallDirs was given it absolute.
function(spool_pc_dir var prefix dir)
  if(IS_ABSOLUTE "${dir}")
    set(${var} "${dir}" PARENT_SCOPE)
  else()
    set(${var} "${prefix}/${dir}" PARENT_SCOPE)
  endif()
endfunction()
spool_pc_dir(SPOOL_PC_LIBDIR "\${prefix}" "${CMAKE_INSTALL_LIBDIR}")  # pkg-config's ${prefix}
spool_pc_dir(SPOOL_PC_INCLUDEDIR "\${prefix}" "${CMAKE_INSTALL_INCLUDEDIR}")
spool_pc_dir(SPOOL_PC_DESTINATION "\${CMAKE_INSTALL_PREFIX}" "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
set(SPOOL_PC_REQUIRES "")
if(SPOOL_HAVE_LIBURING AND SPOOL_SHARED)
  set(SPOOL_PC_REQUIRES "Requires.private: liburing")
elseif(SPOOL_HAVE_LIBURING)
  set(SPOOL_PC_REQUIRES "Requires: liburing")
endif()
configure_file(cmake/spool-pc-install.cmake.in ${PROJECT_BINARY_DIR}/spool-pc-install.cmake @ONLY)
install(SCRIPT ${PROJECT_BINARY_DIR}/spool-pc-install.cmake COMPONENT dev)
