# SPDX-License-Identifier: Apache-2.0
# Debian packages (`make deb`, i.e. cpack -G DEB), one per install component:
#   tailcause             the daemon, its configuration (a conffile), recipes, systemd unit and
#                         the Python package `tailcause instrument` runs
#   libtailcause-sdk0     libtailcause_sdk.so.0, what instrumented agents (and Python) load
#   libtailcause-sdk-dev  headers, the .so link, pkg-config and CMake files, to build agents
# Split the Debian way so an agent's image carries neither the daemon nor its libraries, and a
# node running the daemon needs no compiler headers. Depends come from dpkg-shlibdeps.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tailcause)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "The tailcause authors")
set(CPACK_PACKAGE_CONTACT "tailcause maintainers <tailcause@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "kernel causes of LLM and agent tail latency")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
# Install with DESTDIR and the real prefix: cmake/install_daemon_files.cmake maps /usr to /etc.
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL daemon sdk sdk-dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# dpkg-shlibdeps must find libtailcause_sdk.so.0 in this build when resolving its users.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_BINARY_DIR}/sdk)

set(CPACK_DEBIAN_DAEMON_PACKAGE_NAME tailcause)
set(CPACK_DEBIAN_DAEMON_PACKAGE_SECTION admin)
set(CPACK_COMPONENT_DAEMON_DESCRIPTION
    "kernel causes of LLM and agent tail latency\n"
    "A libbpf CO-RE daemon that splits every request's and agent stage's wall time into its\n"
    "kernel causes (run-queue wait, CPU throttling, block I/O, page-cache misses, network,\n"
    "locks, GPU sync) per tenant, and exposes them to Prometheus, OTLP and a glitch journal.")
set(CPACK_DEBIAN_DAEMON_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/cmake/deb/conffiles ${CMAKE_SOURCE_DIR}/cmake/deb/prerm
    ${CMAKE_SOURCE_DIR}/cmake/deb/postrm)
# `tailcause instrument`'s Python package marks the agent through the SDK library's probes:
# without it every probe is a no-op. Added to what dpkg-shlibdeps finds.
set(CPACK_DEBIAN_DAEMON_PACKAGE_DEPENDS "libtailcause-sdk0 (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_DAEMON_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# `tailcause heatmap --out FILE.png` draws its labels in fontconfig's sans-serif; without a
# font it asks for one (or --font, or .svg), so the font is recommended, not required.
set(CPACK_DEBIAN_DAEMON_PACKAGE_RECOMMENDS fonts-dejavu-core)

set(CPACK_DEBIAN_SDK_PACKAGE_NAME libtailcause-sdk0)
set(CPACK_DEBIAN_SDK_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_SDK_DESCRIPTION
    "tailcause SDK: USDT probes for requests and agent stages (shared library)\n"
    "libtailcause_sdk.so.0: the SDK's probes as C functions, for FFI users such as the\n"
    "Python package, and the circuit breaker client.")
# Its shlibs file lets packages built against it get their Depends the same way.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")

set(CPACK_DEBIAN_SDK-DEV_PACKAGE_NAME libtailcause-sdk-dev)
set(CPACK_DEBIAN_SDK-DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_SDK-DEV_PACKAGE_ARCHITECTURE_DEFAULT ON)
# The headers include <sys/sdt.h>; the .so link points at the runtime package's library.
set(CPACK_DEBIAN_SDK-DEV_PACKAGE_DEPENDS
    "libtailcause-sdk0 (= ${PROJECT_VERSION}), systemtap-sdt-dev")
set(CPACK_COMPONENT_SDK-DEV_DESCRIPTION
    "tailcause SDK: USDT probes for requests and agent stages (development files)\n"
    "<tailcause/sdk.h> and <tailcause/sdk.hpp>, pkg-config (tailcause-sdk) and CMake\n"
    "(find_package(tailcause), target tailcause::sdk) files.")
include(CPack)
