# SPDX-License-Identifier: Apache-2.0
# `cmake --install` (and `make install`, DESTDIR honoured) in three components, one per Debian
# package (cmake/TailcausePackaging.cmake):
#   daemon   bin/tailcause, <etc>/tailcause/tailcause.yaml, share/tailcause/recipes/, the unit,
#            lib/tailcause/python/ (the Python package `tailcause instrument` runs)
#   sdk      lib/<multiarch>/libtailcause_sdk.so.0 (what agents load at run time, Python's too)
#   sdk-dev  the headers, the libtailcause_sdk.so link, tailcause-sdk.pc, the CMake package
# Relocatable: the prefix is the one given at install time (cmake --install --prefix, or CPack's
# /usr), not the configure-time one, so one build serves `make install` and `make deb`. Paths
# that name the prefix (the unit, the .pc file, /etc) are therefore written by install(CODE).
include(CMakePackageConfigHelpers)
# Installing (and cpack's preinstall step) builds nothing: `make install` / `make deb` build the
# two installed targets first, and a test-enabled tree must not compile its tests to package.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

# ---- daemon ------------------------------------------------------------------------
install(TARGETS tailcause RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT daemon)
# The daemon finds relative recipe names here (src/core/config/recipe_path.cpp: <bin>/../share/...).
install(DIRECTORY deploy/recipes/ DESTINATION ${CMAKE_INSTALL_DATADIR}/tailcause/recipes
        COMPONENT daemon FILES_MATCHING PATTERN "*.yaml")
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT daemon RENAME copyright)
install(FILES bpf/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT daemon
        RENAME LICENSE.bpf)
# The Python package `tailcause instrument` puts on PYTHONPATH, where it looks for it
# (src/cli/cmd_instrument.cpp: <bin>/../lib/tailcause/python), with its C extension when the build
# made one: private to the daemon and arch-dependent, so under lib/, not share/ or the system's
# dist-packages. The extension's name carries its interpreter's ABI tag; another interpreter
# ignores it and calls the library through ctypes.
set(TAILCAUSE_PYTHON_DIR lib/tailcause/python/tailcause)
install(DIRECTORY sdk/python/tailcause/ DESTINATION ${TAILCAUSE_PYTHON_DIR} COMPONENT daemon
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
if(TARGET tailcause_python_speedups)
  install(TARGETS tailcause_python_speedups LIBRARY DESTINATION ${TAILCAUSE_PYTHON_DIR}
          COMPONENT daemon)
endif()
# The configuration goes to /etc for the prefix /usr (as GNUInstallDirs has it), else
# <prefix>/etc; the unit to <prefix>/lib/systemd/system, naming both paths.
install(CODE "
  set(TC_SRC \"${CMAKE_SOURCE_DIR}\")
  set(TC_BIN \"${CMAKE_BINARY_DIR}\")
  set(TC_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
  include(\"${CMAKE_SOURCE_DIR}/cmake/install_daemon_files.cmake\")
" COMPONENT daemon)

# ---- SDK: the shared library (run time) ---------------------------------------------
install(TARGETS tailcause_sdk EXPORT tailcauseTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT sdk NAMELINK_COMPONENT sdk-dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES sdk/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/libtailcause-sdk0
        COMPONENT sdk RENAME copyright)

# ---- SDK: development files -----------------------------------------------------------
install(FILES sdk/include/tailcause/sdk.h sdk/include/tailcause/sdk.hpp
              sdk/include/tailcause/sdk_lib.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tailcause COMPONENT sdk-dev)
install(FILES sdk/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/libtailcause-sdk-dev
        COMPONENT sdk-dev RENAME copyright)
install(CODE "
  set(TC_VERSION \"${PROJECT_VERSION}\")
  set(TC_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(TC_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  configure_file(\"${CMAKE_SOURCE_DIR}/cmake/tailcause-sdk.pc.in\"
                 \"${CMAKE_BINARY_DIR}/install/tailcause-sdk.pc\" @ONLY)
  file(INSTALL \"${CMAKE_BINARY_DIR}/install/tailcause-sdk.pc\"
       DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\")
" COMPONENT sdk-dev)
set(TAILCAUSE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tailcause)
install(EXPORT tailcauseTargets NAMESPACE tailcause:: DESTINATION ${TAILCAUSE_CMAKE_DIR}
        COMPONENT sdk-dev)
configure_package_config_file(cmake/tailcauseConfig.cmake.in
  ${CMAKE_BINARY_DIR}/tailcauseConfig.cmake INSTALL_DESTINATION ${TAILCAUSE_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/tailcauseConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/tailcauseConfig.cmake
              ${CMAKE_BINARY_DIR}/tailcauseConfigVersion.cmake
        DESTINATION ${TAILCAUSE_CMAKE_DIR} COMPONENT sdk-dev)
