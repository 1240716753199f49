# install() rules and the exported CMake package: after `cmake --install`, a separate
# project can use find_package(spool CONFIG REQUIRED) and link spool::spool (and, with
# COMPONENTS tls, spool::tls).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS spool EXPORT spoolTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/spool DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT spoolTargets NAMESPACE spool::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spool)
# spool::tls, when built: the component "tls" (cmake/spool-tls.cmake finds OpenSSL for it).
if(TARGET spool_tls)
  set_target_properties(spool_tls PROPERTIES EXPORT_NAME tls)
  install(TARGETS spool_tls EXPORT spoolTlsTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT spoolTlsTargets NAMESPACE spool::
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spool)
  install(FILES cmake/spool-tls.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spool)
endif()

configure_package_config_file(cmake/spoolConfig.cmake.in
  ${PROJECT_BINARY_DIR}/spoolConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spool)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/spoolConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/spoolConfig.cmake ${PROJECT_BINARY_DIR}/spoolConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spool)
