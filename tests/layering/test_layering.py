# SPDX-License-Identifier: Apache-2.0
"""The house's layering, checked on the includes (ctest: layering, no root).

The core's floors and what each may use are read from src/core/CMakeLists.txt (the
tailcause_core_floor() calls), so the build and this check name one order. Above the core:
export and probes use the core only, the daemon uses those, the CLI uses everything. Only the
record decoder and the probes see the BPF ABI (bpf/<family>.h).
"""
import pathlib
import re
import sys

SRC = pathlib.Path(__file__).resolve().parents[2] / "src"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
FLOOR_CALL = re.compile(r"^tailcause_core_floor\((\w+)([^)]*)\)", re.M)
# Above the core: which top-level folders of src/ each may include.
UPPER = {
    "export": {"core", "export"},
    "probes": {"core", "probes", "bpf"},
    "daemon": {"core", "export", "probes", "daemon", "bpf"},
    "cli": {"core", "export", "probes", "daemon", "cli"},
}


def core_floors():
    """Each floor with the floors it may include (itself and all below it)."""
    text = (SRC / "core" / "CMakeLists.txt").read_text()
    direct = {}
    for name, args in FLOOR_CALL.findall(text):
        direct[name] = set(re.findall(r"tailcause_core_(\w+)", args))
    if not direct:
        sys.exit("no tailcause_core_floor() calls in src/core/CMakeLists.txt")
    allowed = {}
    for floor in direct:  # floors are declared lowest first, so their deps are done
        reach = {floor}
        for dep in direct[floor]:
            if dep not in allowed:
                sys.exit(f"floor {floor} uses {dep}, which is not declared below it")
            reach |= allowed[dep]
        allowed[floor] = reach
    return allowed


def main():
    floors = core_floors()
    bad = []
    for path in sorted(SRC.rglob("*")):
        if path.suffix not in (".h", ".cpp", ".c"):
            continue
        rel = path.relative_to(SRC)
        top = rel.parts[0]
        if top == "core":
            if len(rel.parts) != 3 or rel.parts[1] not in floors:
                bad.append(f"{rel}: a core unit belongs in one floor folder ({', '.join(floors)})")
                continue
            floor = rel.parts[1]
        for inc in INCLUDE.findall(path.read_text(errors="replace")):
            parts = inc.split("/")
            if len(parts) < 2:
                continue  # a generated header next to the build (ui_page.h, skeletons)
            if top == "core":
                if parts[0] == "bpf":
                    if floor != "record":
                        bad.append(f"{rel}: includes {inc}: only the record decoder reads the "
                                   "BPF ABI; ask StageRecord")
                elif parts[0] != "core":
                    bad.append(f"{rel}: includes {inc}: the core includes no layer above it")
                elif parts[1] not in floors[floor]:
                    bad.append(f"{rel}: includes {inc}: floor {floor} may use "
                               f"{', '.join(sorted(floors[floor]))}")
            elif top in UPPER and parts[0] in ("core", "export", "probes", "daemon", "cli", "bpf"):
                if parts[0] not in UPPER[top]:
                    bad.append(f"{rel}: includes {inc}: {top} may use "
                               f"{', '.join(sorted(UPPER[top]))}")
    for line in bad:
        print(line)
    checked = sum(1 for p in SRC.rglob("*") if p.suffix in (".h", ".cpp", ".c"))
    print(f"layering: {checked} files, {len(bad)} crossing a floor")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
