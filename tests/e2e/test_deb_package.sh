#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian packages, the way a user meets them: cpack builds them from this build, apt
# installs them (offline: their dependencies are already here), the installed `tailcause
# probes` attaches every family, the installed `tailcause instrument` runs a Python program with
# its package, a small agent builds against the installed SDK with pkg-config and with
# find_package(tailcause), the Python SDK installs offline into a venv and finds the installed
# library, both through the C extension where the build made one, and a purge leaves none of the
# packages' files behind.
source "$(dirname "$0")/lib.sh"
require_root
PKGS=(tailcause libtailcause-sdk0 libtailcause-sdk-dev)
for p in "${PKGS[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "installed"; then
    fail "$p is already installed on this machine; purge it first (apt-get purge ${PKGS[*]})"
  fi
done
command -v dpkg-shlibdeps >/dev/null || fail "no dpkg-shlibdeps (scripts/install-deps.sh test)"
purge() { apt-get purge -y -q "${PKGS[@]}" >/dev/null 2>&1 || true; }
on_exit purge

# ---- build and install -------------------------------------------------------------------
(cd "$BUILD_DIR" && cpack -G DEB -B "$WORK/pkg") >"$WORK/cpack.log" 2>&1 || fail "cpack: $(tail -20 "$WORK/cpack.log")"
debs=("$WORK"/pkg/*.deb)
[ ${#debs[@]} -eq 3 ] || fail "expected three packages: ${debs[*]}"
deb_of() { ls "$WORK"/pkg/"$1"_*.deb; }
depends=$(dpkg-deb -f "$(deb_of tailcause)" Depends)
for lib in libc6 libbpf1 libelf1 libsqlite3-0 libmnl0; do
  [[ $depends == *"$lib"* ]] || fail "tailcause Depends lacks $lib: $depends"
done
[[ $(dpkg-deb -f "$(deb_of libtailcause-sdk-dev)" Depends) == *"libtailcause-sdk0 (= "* ]] || fail "sdk-dev Depends"
[[ $depends == *"libtailcause-sdk0 (= "* ]] || fail "tailcause Depends lacks libtailcause-sdk0 (instrument's probes)"
[[ $(dpkg-deb -f "$(deb_of tailcause)" Recommends) == *fonts-dejavu-core* ]] ||
  fail "tailcause Recommends lacks fonts-dejavu-core (heatmap PNG labels)"
dpkg-deb -I "$(deb_of libtailcause-sdk0)" shlibs | grep -q "^libtailcause_sdk 0 libtailcause-sdk0" || fail "no shlibs"
pass "three packages, Depends from dpkg-shlibdeps: $depends"
# Paths: apt installs local files; it fetches nothing when the dependencies are here.
chmod 755 "$WORK" "$WORK/pkg"
apt-get install -y -q --no-install-recommends "${debs[@]}" >"$WORK/apt.log" 2>&1 || fail "apt-get install: $(tail -20 "$WORK/apt.log")"
for f in /usr/bin/tailcause /etc/tailcause/tailcause.yaml /usr/share/tailcause/recipes/cuda.yaml \
  /usr/lib/systemd/system/tailcause.service /usr/include/tailcause/sdk.hpp \
  /usr/lib/tailcause/python/tailcause/instrument.py; do
  [ -e "$f" ] || fail "$f not installed"
done
dpkg-query -W -f='${Conffiles}' tailcause | grep -q /etc/tailcause/tailcause.yaml || fail "config is not a conffile"
pass "apt-get installed them"

# ---- the installed daemon ----------------------------------------------------------------
/usr/bin/tailcause probes --config /etc/tailcause/tailcause.yaml --json >"$WORK/p.json" || fail "installed probes: $(cat "$WORK/p.json")"
/usr/bin/python3 - "$WORK/p.json" <<'PY' || fail "installed probes: $(cat "$WORK/p.json")"
import json, sys
fams = {f["name"]: f["attached"] for f in json.load(open(sys.argv[1]))["families"]}
assert len(fams) == 6 and all(fams.values()), fams
PY
pass "the installed tailcause probes attaches all six families"

# The Python package comes with the daemon; the probes are called through the C extension
# where this build made one (python3-dev), else through ctypes.
# The version project() sets, as the build's own daemon prints it.
version=$("$TAILCAUSE" --version | awk '{print $2}')
if compgen -G "$BUILD_DIR/sdk/_speedups*.so" >/dev/null; then want_probes=Probes; else want_probes=_CtypesProbes; fi
cat >"$WORK/which_probes.py" <<'PY'
import tailcause, tailcause._native as n
print(type(n.probes).__name__, tailcause.library_path, tailcause.version())
PY
out=$(cd / && env -u TAILCAUSE_SDK_LIB /usr/bin/tailcause instrument -- /usr/bin/python3 -W error "$WORK/which_probes.py" 2>&1) ||
  fail "installed tailcause instrument: $out"
[[ $out == "$want_probes libtailcause_sdk.so"*" $version" ]] || fail "installed tailcause instrument: $out (want $want_probes)"
pass "the installed tailcause instrument runs Python with its package: $out"

# ---- an agent against the installed SDK --------------------------------------------------
mkdir -p "$WORK/agent"
cat >"$WORK/agent/agent.cpp" <<'CPP'
#include <tailcause/sdk.hpp>
#include <tailcause/sdk_lib.h>
#include <cstdio>
int main() {
  tailcause::Request req("tenant-a", "deb-agent");
  { tailcause::Stage s(req, tailcause::StageKind::retrieval); }
  req.end(0);
  std::printf("sdk %s\n", tailcause_sdk_version());
  return 0;
}
CPP
cat >"$WORK/agent/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(deb_agent CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(tailcause 0.1 REQUIRED)
add_executable(agent agent.cpp)
target_link_libraries(agent PRIVATE tailcause::sdk)
CMAKE
want="sdk $(dpkg-query -W -f='${Version}' libtailcause-sdk0)"
# shellcheck disable=SC2046
g++ -std=c++20 "$WORK/agent/agent.cpp" -o "$WORK/agent/by-pkgconfig" $(pkg-config --cflags --libs tailcause-sdk) || fail "pkg-config build"
[ "$("$WORK/agent/by-pkgconfig")" = "$want" ] || fail "pkg-config agent: $("$WORK/agent/by-pkgconfig")"
readelf -d "$WORK/agent/by-pkgconfig" | grep -q 'NEEDED.*libtailcause_sdk.so.0' || fail "not linked to the SONAME"
{ cmake -S "$WORK/agent" -B "$WORK/agent/build" >"$WORK/cmake.log" 2>&1 && cmake --build "$WORK/agent/build" >>"$WORK/cmake.log" 2>&1; } || fail "find_package build: $(tail -20 "$WORK/cmake.log")"
[ "$("$WORK/agent/build/agent")" = "$want" ] || fail "find_package agent"
pass "agents built with pkg-config and with find_package(tailcause) run ($want)"

# ---- the Python SDK, offline into a venv of Debian's python3 --------------------------------
cp -r "$SRC_DIR/sdk/python" "$WORK/pysdk"  # pip builds in the tree: not in the sources
rm -rf "$WORK/pysdk/build" "$WORK"/pysdk/*.egg-info
/usr/bin/python3 -m venv --system-site-packages "$WORK/venv"
"$WORK/venv/bin/pip" install -q --no-index --no-build-isolation "$WORK/pysdk" >"$WORK/pip.log" 2>&1 || fail "pip install: $(tail -20 "$WORK/pip.log")"
out=$(cd / && "$WORK/venv/bin/python" -W error -c 'import tailcause; print(tailcause.library_path, tailcause.version())') || fail "python: $out"
[[ $out == *libtailcause_sdk.so*" $version" ]] || fail "python SDK did not find the installed library: $out"
# pip builds the extension against the installed <tailcause/sdk_lib.h> (setup.py).
kind=$(cd / && "$WORK/venv/bin/python" -W error -c 'import tailcause._native as n; print(type(n.probes).__name__)') || fail "python: $kind"
[ "$kind" = "$want_probes" ] || fail "pip-installed package calls its probes through $kind, want $want_probes"
pass "pip install --no-index into a venv; the package loads the installed library ($out, $kind)"

# ---- purge ---------------------------------------------------------------------------------
files=$(dpkg -L "${PKGS[@]}" | sort -u)
mkdir -p /var/lib/tailcause && touch /var/lib/tailcause/journal.db  # as the service would leave
apt-get purge -y -q "${PKGS[@]}" >"$WORK/purge.log" 2>&1 || fail "purge: $(tail -20 "$WORK/purge.log")"
left=()
while IFS= read -r f; do
  [ -e "$f" ] || continue
  [ -d "$f" ] && [ -n "$(ls -A "$f")" ] && continue  # a shared directory (/usr/include ...)
  [ -d "$f" ] && dpkg -S "$f" >/dev/null 2>&1 && continue  # empty, but another package's
  left+=("$f")
done <<<"$files"
[ ${#left[@]} -eq 0 ] || fail "left after purge: ${left[*]}"
{ [ ! -e /etc/tailcause ] && [ ! -e /var/lib/tailcause ]; } || fail "purge left /etc/tailcause or /var/lib/tailcause"
# instrument ran the package as root above, so Python wrote its byte-code cache there.
[ ! -e /usr/lib/tailcause ] || fail "purge left /usr/lib/tailcause: $(find /usr/lib/tailcause | head)"
pass "purge removed every file"
