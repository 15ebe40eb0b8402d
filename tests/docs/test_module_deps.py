#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The modules depend only in the directions docs/design/pipeline.md draws.

Reads the table under "Modules and the directions they depend in" (module |
may use) and checks every #include of lib/<module>/ and of the module's
public headers (lib/<module>/include/histd/): a header of another module
must be one the row allows, and no module may reach into another's private
headers ("parse/text.h" from outside lib/parse). The build holds a module to
what its row and the rows below allow; this holds it to its own row. Also:
every lib/ folder has a row, a row uses only rows above it (no cycle), and
lib/CMakeLists.txt links each module as its row says.
Usage: test_module_deps.py SRC
"""
import re
import sys
from pathlib import Path

# Public headers that are not named after their module.
HEADER_MODULE = {
    "diagnostic": "common", "result": "common", "text": "common", "fd": "common",
    "mountinfo": "common", "populate": "common", "log_summary": "common", "digest": "common",
    "enum_rows": "common",
    "table_reader": "table", "plan_memory": "plan", "trace_buffer": "trace", "trace_ring": "deploy", "probe_files": "deploy",
    "kernel": "deploy", "kernel_reads": "deploy", "event_pids": "deploy",
    "restorer": "engine", "config_items": "engine", "engine_reads": "engine",
}
# The document whose module table this test reads.
DESIGN = "docs/design/pipeline.md"
# The build's rows: histd_module(NAME USES a b c [EXTERNAL ...]).
BUILD = "lib/CMakeLists.txt"
BUILD_ROW = re.compile(r"^histd_module\((\w+)((?:\s+[^)]*)?)\)", re.M)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def allowed_table(design: str):
    section = re.split(r"^#+ Modules and the directions they depend in$", design, maxsplit=1, flags=re.M)
    if len(section) < 2:
        sys.exit(f"FAIL: {DESIGN} has no section 'Modules and the directions they depend in'")
    rows = {}
    order = []
    for line in section[1].splitlines():
        m = re.match(r"^\| (\w+) \|([^|]*)\|$", line)
        if m and m.group(1) != "module":
            rows[m.group(1)] = m.group(2).split()
            order.append(m.group(1))
        elif order and not line.startswith("|"):
            break
    return rows, order


def build_table(text: str):
    rows = {}
    for name, rest in BUILD_ROW.findall(text):
        words = rest.split()
        uses = words[words.index("USES") + 1:] if "USES" in words else []
        if "EXTERNAL" in uses:
            uses = uses[:uses.index("EXTERNAL")]
        rows[name] = uses
    return rows


def module_of_header(name: str, modules):
    base = name[len("histd/"):-len(".h")]
    if base in HEADER_MODULE:
        return HEADER_MODULE[base]
    return base if base in modules else None


def main() -> int:
    src = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    rows, order = allowed_table((src / DESIGN).read_text())
    failures = []
    for i, m in enumerate(order):
        for used in rows[m]:
            if used not in order[:i]:
                failures.append(f"{DESIGN}: {m} uses {used}, which is not a row above it")
    folders = sorted(p.name for p in (src / "lib").iterdir() if p.is_dir())
    for f in folders:
        if f not in rows:
            failures.append(f"lib/{f} has no row in {DESIGN}'s module table")
    modules = set(rows)
    headers = {}
    built = build_table((src / BUILD).read_text())
    for m in order:
        if m not in built:
            failures.append(f"{BUILD}: module {m} has no histd_module() row")
        elif sorted(built[m]) != sorted(rows[m]):
            failures.append(f"{BUILD}: {m} links {' '.join(built[m]) or 'nothing'}, {DESIGN} says {' '.join(rows[m]) or 'nothing'}")
    for m in built:
        if m not in rows:
            failures.append(f"{BUILD}: module {m} has no row in {DESIGN}")
    for h in (src / "lib").glob("*/include/histd/*.h"):
        owner = module_of_header(f"histd/{h.name}", modules)
        if owner is None:
            failures.append(f"{h.relative_to(src)} belongs to no module of the table")
        elif h.parent.parent.parent.name != owner:
            failures.append(f"{h.relative_to(src)} is {owner}'s header: it belongs in lib/{owner}/include/histd/")
        else:
            headers.setdefault(owner, []).append(h)
    for m in order:
        files = sorted((src / "lib" / m).glob("*.[ch]*")) if (src / "lib" / m).is_dir() else []
        files += headers.get(m, [])
        for f in files:
            for inc in INCLUDE.findall(f.read_text()):
                rel = f.relative_to(src)
                if inc.startswith("histd/"):
                    used = module_of_header(inc, modules)
                    if used is None:
                        failures.append(f"{rel}: {inc} belongs to no module of the table")
                    elif used != m and used not in rows[m]:
                        failures.append(f"{rel}: {m} may not use {used} ({inc})")
                elif "/" in inc and inc.split("/")[0] in modules and inc.split("/")[0] != m:
                    failures.append(f"{rel}: {inc} is private to lib/{inc.split('/')[0]}")
    for line in failures:
        print("FAIL:", line)
    if not failures:
        print(f"ok: {len(order)} modules depend only as {DESIGN} draws them")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
