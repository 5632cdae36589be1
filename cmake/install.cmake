# `cmake --install`: the libraries an embedder links (carapace::common, carapace::vmm,
# carapace::snapshot, carapace::pool; see vmm/embed/carapace.h), their headers under
# <prefix>/include/carapace, the `carapace` executable, a CMake package for
# find_package(carapace) and a pkg-config file (carapace.pc).
include(CMakePackageConfigHelpers)

get_property(carapace_exported GLOBAL PROPERTY CARAPACE_EXPORTED_TARGETS)
install(TARGETS ${carapace_exported} carapace_version EXPORT carapaceTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS carapace RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The headers keep their tree paths: the libraries include each other as "vmm/machine/machine.h".
# The monitor's commands and control API are not part of the libraries.
install(DIRECTORY common vmm snapshot DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/carapace
        FILES_MATCHING PATTERN "*.h"
        PATTERN "cli" EXCLUDE PATTERN "control" EXCLUDE)
install(FILES ${CARAPACE_GENERATED_DIR}/carapace/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/carapace/carapace)

set(carapace_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/carapace)
install(EXPORT carapaceTargets NAMESPACE carapace:: DESTINATION ${carapace_cmake_dir})
configure_package_config_file(cmake/carapaceConfig.cmake.in
  ${PROJECT_BINARY_DIR}/carapaceConfig.cmake INSTALL_DESTINATION ${carapace_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/carapaceConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/carapaceConfig.cmake
        ${PROJECT_BINARY_DIR}/carapaceConfigVersion.cmake DESTINATION ${carapace_cmake_dir})

file(RELATIVE_PATH CARAPACE_PC_TO_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
configure_file(cmake/carapace.pc.in ${PROJECT_BINARY_DIR}/carapace.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/carapace.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
