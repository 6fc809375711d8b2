#!/usr/bin/env python3
"""healthd's folders include one another in one direction only.

The order is written once, in ARCHITECTURE.md's ```layers block (bottom first): a folder may include
its own headers and those of any folder listed above it in that block, never one listed below it.
The bottom folder (the shared vocabulary) includes nothing of the project at all. `auto_resume/`
(include/, the protocol shared with the plugin) sits under every folder but the vocabulary.

    check_layers.py SOURCE_ROOT      (the repository: reads ARCHITECTURE.md and healthd/)

Exits 0 when every include goes down, 1 with one line per include that does not (file:line, what it
includes, why), 2 when the layers cannot be read. A new folder under healthd/ fails until it is
placed in the order: where it sits is a design decision, not a default.
"""

from __future__ import annotations

import pathlib
import re
import sys

ROOT_FILES = "(root)"  # healthd/daemon.cpp, daemon_startup.cpp, main.cpp: the composition root
SHARED = "auto_resume"  # include/auto_resume/: the protocol and the job comment, shared with the plugin
GENERATED = {"version.hpp"}  # configured into the build folder (healthd/version.hpp.in)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE_SUFFIXES = {".hpp", ".cpp", ".h", ".in"}


class LayersError(Exception):
    pass


def read_layers(architecture: pathlib.Path) -> list[str]:
    """The folders of the ```layers block, bottom first (the first word of each line)."""
    text = architecture.read_text(encoding="utf-8")
    match = re.search(r"^```layers\n(.*?)^```", text, re.M | re.S)
    if not match:
        raise LayersError(f"{architecture}: no ```layers block")
    layers = [line.split()[0] for line in match.group(1).splitlines() if line.strip()]
    duplicates = {name for name in layers if layers.count(name) > 1}
    if duplicates:
        raise LayersError(f"{architecture}: listed twice in the layers block: {', '.join(sorted(duplicates))}")
    return layers


def folder_of(path: pathlib.Path, healthd: pathlib.Path) -> str:
    parts = path.relative_to(healthd).parts
    return ROOT_FILES if len(parts) == 1 else parts[0]


def target_of(include: str, including: pathlib.Path, healthd: pathlib.Path, folders: set[str]) -> str | None:
    """The folder an include reaches, SHARED, or None for a generated header."""
    first = include.split("/")[0]
    if first == SHARED:
        return SHARED
    if "/" in include and first in folders:
        return first
    beside = (including.parent / include).resolve()
    if beside.is_file():  # relative to the including file ("x.hpp", "../y/z.hpp")
        if not beside.is_relative_to(healthd.resolve()):
            raise LayersError(f'{including}: #include "{include}" reaches outside healthd/')
        return folder_of(beside, healthd.resolve())
    if include in GENERATED:
        return None
    raise LayersError(f'{including}: cannot place #include "{include}" in any folder')


def check(source_root: pathlib.Path) -> list[str]:
    layers = read_layers(source_root / "ARCHITECTURE.md")
    rank = {name: i for i, name in enumerate(layers)}
    healthd = source_root / "healthd"
    folders = {p.name for p in healthd.iterdir() if p.is_dir()}
    problems = []
    for folder in sorted(folders - set(layers)):
        problems.append(f"healthd/{folder}/: not in ARCHITECTURE.md's layers block (place it in the order)")
    for path in sorted(p for p in healthd.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file()):
        source = folder_of(path, healthd)
        if source not in rank:
            continue  # reported above (or a root file while the block has no (root) line)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            include = match.group(1)
            target = target_of(include, path, healthd, folders)
            where = f"{path.relative_to(source_root)}:{number}"
            if target is None or target == source:
                continue
            if source == layers[0]:
                problems.append(f'{where}: {source} includes "{include}"; the bottom folder includes nothing of the project')
            elif target == SHARED:
                continue
            elif target not in rank:
                continue  # the unplaced folder is reported once above
            elif rank[target] > rank[source]:
                problems.append(f'{where}: {source} includes "{include}" of {target}, a folder above it '
                                f"({' < '.join(layers)})")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        problems = check(pathlib.Path(argv[1]))
    except LayersError as error:
        print(f"check_layers: {error}", file=sys.stderr)
        return 2
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_layers: {len(problems)} include(s) against the layers of ARCHITECTURE.md", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
