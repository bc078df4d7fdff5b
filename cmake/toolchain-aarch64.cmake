# SPDX-License-Identifier: Apache-2.0
# Cross build for arm64 on a Debian x86-64 host (`make cross-arm64`): Debian's aarch64-linux-gnu
# cross compilers (crossbuild-essential-arm64) and its multiarch :arm64 libraries, installed into
# / beside the host's (scripts/install-deps.sh cross-arm64).
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
# Headers come from /usr/include (+ /usr/include/aarch64-linux-gnu), libraries and CMake packages
# from /usr/lib/aarch64-linux-gnu: no sysroot, since multiarch keeps both architectures apart.
# Build-time programs (protoc, clang -target bpf, bpftool) stay the host's.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)  # CMakeLists.txt: BPF_ARCH arm64, bpf/arm64/vmlinux.h
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# find_package/find_library search <prefix>/lib/aarch64-linux-gnu (CMAKE_LIBRARY_ARCHITECTURE)
# and the arch-independent <prefix>/share; programs are searched on the host as usual.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

# pkg-config sees the arm64 .pc files and the arch-independent ones, never the host's
# /usr/lib/x86_64-linux-gnu/pkgconfig (nor a PKG_CONFIG_PATH from the environment).
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
unset(ENV{PKG_CONFIG_SYSROOT_DIR})

# yaml-cpp: Debian 12's libyaml-cpp-dev is not Multi-Arch: same, so its :arm64 package would
# replace the host's. The cross build takes the host's headers (/usr/include/yaml-cpp, the same
# for both architectures) and links the arm64 run-time library (libyaml-cpp0.7:arm64), through
# this package file that find_package(yaml-cpp) reads in place of the -dev package's. Where
# libyaml-cpp-dev:arm64 is installed after all, its own package file is used.
if(NOT EXISTS /usr/lib/aarch64-linux-gnu/cmake/yaml-cpp/yaml-cpp-config.cmake)
  set(_tc_yaml_cpp ${CMAKE_BINARY_DIR}/CMakeFiles/yaml-cpp-arm64)
  file(WRITE ${_tc_yaml_cpp}/yaml-cpp-config.cmake [=[
if(NOT EXISTS /usr/lib/aarch64-linux-gnu/libyaml-cpp.so.0.7 OR NOT EXISTS /usr/include/yaml-cpp/yaml.h)
  set(yaml-cpp_FOUND FALSE)
  set(yaml-cpp_NOT_FOUND_MESSAGE
      "needs libyaml-cpp0.7:arm64 and the host's libyaml-cpp-dev (scripts/install-deps.sh cross-arm64)")
  return()
endif()
if(NOT TARGET yaml-cpp)
  add_library(yaml-cpp SHARED IMPORTED)
  set_target_properties(yaml-cpp PROPERTIES
    IMPORTED_LOCATION /usr/lib/aarch64-linux-gnu/libyaml-cpp.so.0.7
    IMPORTED_SONAME libyaml-cpp.so.0.7)
endif()
set(YAML_CPP_LIBRARIES yaml-cpp)
]=])
  set(yaml-cpp_DIR ${_tc_yaml_cpp} CACHE PATH "yaml-cpp for arm64 (cmake/toolchain-aarch64.cmake)")
endif()

# ctest (and add_custom_command on built programs) runs the arm64 executables under qemu-user.
# -L /: the loader and libraries are the multiarch :arm64 ones in / (libc6:arm64, a dependency of
# every :arm64 -dev package), so ld.so and libc.so.6 come from one glibc build. Not -L
# /usr/aarch64-linux-gnu: the cross toolchain's glibc there (libc6-arm64-cross, what the programs
# link against) may be another Debian revision, and its ld.so would still load the multiarch
# libc.so.6 and libraries from /lib/aarch64-linux-gnu: a mismatched pair.
find_program(QEMU_AARCH64 qemu-aarch64-static qemu-aarch64)
if(QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${QEMU_AARCH64};-L;/")
endif()
