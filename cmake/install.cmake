# Installation and the exported CMake package.
#
#   cmake --install build --prefix /opt/kiln
#
# lays out
#   bin/kiln                               the command-line tool (tools/ installs it)
#   include/kiln/*.h                       the public headers
#   <libdir>/libkiln.so*                   the library, with its SONAME links
#   <libdir>/libkiln_device_<name>.so      the device plugins (devices/<name>/ install them here,
#                                          beside libkiln, which is where the registry looks)
#   <libdir>/cmake/kiln/                   kilnConfig.cmake, its version file and kilnTargets.cmake
#
# so that an application needs only
#   find_package(kiln REQUIRED)
#   target_link_libraries(app PRIVATE kiln::kiln)

include(CMakePackageConfigHelpers)

set(KILN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)

# The public headers use C++17 (inline variables); say so to consumers of the exported target.
target_compile_features(kiln INTERFACE cxx_std_17)

# Only libkiln is exported. It is a shared library built from the objects of kiln_core,
# kiln_codegen and kiln_runtime (not linked to them), and spdlog, Threads and dl are PRIVATE
# dependencies, so the exported target carries none of them and consumers need none of them.
install(TARGETS kiln
  EXPORT kilnTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kiln
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")

install(EXPORT kilnTargets
  NAMESPACE kiln::
  DESTINATION ${KILN_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/kilnConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/kilnConfig.cmake
  INSTALL_DESTINATION ${KILN_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_BINDIR)

# 0.x: a minor version may break the API, so only the same major.minor is compatible.
write_basic_package_version_file(
  ${CMAKE_BINARY_DIR}/cmake/kilnConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)

install(FILES
  ${CMAKE_BINARY_DIR}/cmake/kilnConfig.cmake
  ${CMAKE_BINARY_DIR}/cmake/kilnConfigVersion.cmake
  DESTINATION ${KILN_INSTALL_CMAKEDIR})
