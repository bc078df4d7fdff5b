# SPDX-License-Identifier: Apache-2.0
# Run at install time (cmake/TailcauseInstall.cmake): the configuration and the systemd unit,
# whose paths depend on the prefix installed to. In: TC_SRC, TC_BIN, TC_BINDIR.
if(CMAKE_INSTALL_PREFIX MATCHES "^/usr/?$")
  set(TC_ETC /etc)
else()
  set(TC_ETC "${CMAKE_INSTALL_PREFIX}/etc")
endif()
set(TC_EXE "${CMAKE_INSTALL_PREFIX}/${TC_BINDIR}/tailcause")
set(TC_CONFIG "${TC_ETC}/tailcause/tailcause.yaml")
include("${TC_SRC}/cmake/systemd_caps.cmake")
# file(INSTALL) adds $DESTDIR to these absolute destinations itself.
file(INSTALL "${TC_SRC}/deploy/tailcause.yaml" DESTINATION "${TC_ETC}/tailcause")
configure_file("${TC_SRC}/deploy/systemd/tailcause.service.in"
               "${TC_BIN}/install/tailcause.service" @ONLY)
file(INSTALL "${TC_BIN}/install/tailcause.service"
     DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
