# Installation: libraries, headers and tools, plus a CMake package so that
# find_package(frugal) + target_link_libraries(app frugal::frugal) works.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(frugal_installed_targets frugal frugal_options frugal_common frugal_allocator frugal_kernels_cpu
    frugal_engine frugal_nn frugal_data frugal_monitor)
if(FRUGAL_WITH_CUDA)
  list(APPEND frugal_installed_targets frugal_kernels_cuda)
endif()
if(TARGET frugal_distributed)
  list(APPEND frugal_installed_targets frugal_distributed)
endif()
install(TARGETS ${frugal_installed_targets}
        EXPORT frugalTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(dir common allocator kernels engine nn data monitor distributed)
  install(DIRECTORY ${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/frugal/${dir}
          FILES_MATCHING PATTERN "*.h")
endforeach()
install(EXPORT frugalTargets NAMESPACE frugal:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/frugal)
configure_package_config_file(cmake/frugalConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/frugalConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/frugal)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/frugalConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/frugalConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/frugalConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/frugal)
