#!/usr/bin/env python3
"""Turns the commented sample config (packaging/healthd.toml) into the key reference of healthd.toml(5).

The sample config is the one documentation of every key. The shape this converter reads (the one
tests/unit/config_tooling_test.cpp and packaged_config_test.cpp read too):

  [section]                     a section (an uncommented TOML table header)
  # text                        text; a paragraph ends at a blank line or a lone "#"
  # key = value                 a key and its default,
  # key = value   # text          optionally with text of its own after the value,
  #               # text          continued on the lines below
  # [section.table]             a sub-table of defaults ([checks.efa.counter_thresholds])
  # Example...                  an example, up to the next blank line: keys (not defaults), or an
  # key = value                   array of tables ([[policy.hook]]), shown verbatim
  <blank line>

Text directly above keys (and an example) describes them; a run of keys without text of their own
shares it. Text followed by a blank line is prose of its section; text directly above a table
header introduces that table. Comment text may change freely. The shape may not: a line that looks
like a key or a table but cannot be read stops the converter with the line named, and so does a
reading that differs from what tomllib reads from the same file with its defaults uncommented, and
with its examples uncommented, so no key is ever dropped silently.

Usage: config_to_man.py --config healthd.toml --header healthd.toml.5.md --output page.md
The header is a pandoc Markdown page holding the line MARKER once; the key reference replaces it.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import string
import sys
import tomllib

MARKER = "<!-- KEYS: generated from packaging/healthd.toml by docs/man/config_to_man.py -->"

KEY = re.compile(r"^# ([a-z0-9_]+) = (.*)$")
TABLE = re.compile(r'^(# )?(\[\[?)([a-z0-9_.]+(?:\."[^"]+")?)(\]\]?)\s*(?:#\s?(.*))?$')
EXAMPLE = "# Example"  # a line starting so starts an example, up to the next blank line


class ShapeError(Exception):
    pass


@dataclasses.dataclass
class Key:
    name: str
    value: str  # the value's TOML text, as written
    parsed: object
    text: list[str]  # its own text, after the value and continued below
    line: int


@dataclasses.dataclass
class Example:
    label: str  # the "Example ...:" line
    raw: list[str]  # its lines, uncommented
    keys: list[Key]
    table: "Table | None" = None  # an example that is a table of its own ([[policy.hook]])


@dataclasses.dataclass
class Entry:
    """Keys shown together: their defaults, the text above them, examples of them."""

    keys: list[Key]
    paragraphs: list[str]
    examples: list[Example]

    def example_only(self) -> list[str]:
        own = {k.name for k in self.keys}
        names = []
        for e in self.examples:
            for k in e.keys:
                if k.name not in own and k.name not in names:
                    names.append(k.name)
        return names


@dataclasses.dataclass
class Prose:
    paragraphs: list[str]


@dataclasses.dataclass
class Table:
    name: str  # as written: checks.gpu, policy.hook
    array: bool  # [[...]]
    intro: list[str]
    items: list  # Entry | Prose, in file order
    example: Example | None  # a table that is an example
    children: list  # example tables shown after this table's items
    line: int

    def heading(self) -> str:
        return f"[[{self.name}]]" if self.array else f"[{self.name}]"


def near_miss(line: str) -> bool:
    """A comment line that, uncommented, is a TOML key or table header although it is not in the
    form above: '#key = 1', '#  key = 1', '# key=1', '# Key = 1', '#[table]'."""
    body = line.lstrip("#").strip()
    if not body or not (body[0].isalnum() or body[0] in "_-[\"'"):
        return False
    try:
        return bool(tomllib.loads(body))
    except tomllib.TOMLDecodeError:
        return False


def split_value(key: str, rest: str, where: str) -> tuple[str, object, str | None]:
    """The value's text, its parsed value and the text after it, in '# key = rest'."""
    try:
        whole = tomllib.loads(f"{key} = {rest}")[key]
    except tomllib.TOMLDecodeError as e:
        raise ShapeError(f"{where}: '{key} = {rest}' looks like a key but is not TOML ({e})") from None
    for i, c in enumerate(rest):
        if c != "#":
            continue
        candidate = rest[:i].rstrip()
        try:
            if tomllib.loads(f"{key} = {candidate}")[key] == whole:
                return candidate, whole, rest[i + 1 :].strip()
        except tomllib.TOMLDecodeError:
            continue
    return rest.strip(), whole, None


def comment_body(line: str) -> str:
    body = line[1:]
    return body[1:] if body.startswith(" ") else body


class Reader:
    def __init__(self, source: str):
        self.source = source
        self.tables: list[Table] = []
        self.home: Table | None = None  # where default keys go: the last section or sub-table
        self.pending: list[str] = []  # finished paragraphs of the comment block being read
        self.par: list[str] = []  # lines of the paragraph being read
        self.run: list[Key] = []  # contiguous default key lines
        self.run_text: list[str] = []  # the paragraphs above that run
        self.run_examples: list[Example] = []
        self.last_key: Key | None = None  # whose text a "#   # more" line continues
        self.example: Example | None = None  # the example being read
        self.example_text: list[str] = []  # the text above it

    def where(self, number: int) -> str:
        return f"{self.source}:{number}"

    def take_text(self) -> list[str]:
        if self.par:
            self.pending.append(" ".join(self.par))
            self.par = []
        out, self.pending = self.pending, []
        return out

    def add(self, item, number: int):
        if self.home is None:
            if isinstance(item, Prose):
                return  # the file's own introduction: the page's header says it
            raise ShapeError(f"{self.where(number)}: a key before any [section]")
        self.home.items.append(item)

    def end_run(self, number: int):
        if not self.run and not self.run_examples:
            return
        # A run of keys without text of their own shares the text above it; a key with text of its
        # own is an entry by itself. The text above goes to the first entry, the examples to the last.
        entries: list[Entry] = []
        plain: list[Key] = []
        for k in self.run:
            if k.text:
                if plain:
                    entries.append(Entry(plain, [], []))
                    plain = []
                entries.append(Entry([k], [], []))
            else:
                plain.append(k)
        if plain or not entries:
            entries.append(Entry(plain, [], []))
        entries[0].paragraphs = self.run_text
        entries[-1].examples = self.run_examples
        if not self.run and not self.run_text and len(self.run_examples) == 1:
            # An example standing alone (after a blank line) of keys documented just above: theirs.
            example = self.run_examples[0]
            previous = self.home.items[-1] if self.home and self.home.items else None
            if isinstance(previous, Entry) and {k.name for k in example.keys} <= {k.name for k in previous.keys}:
                previous.examples.append(example)
                entries = []
        for e in entries:
            self.add(e, number)
        self.run, self.run_text, self.run_examples = [], [], []

    def end_example(self, number: int):
        example, self.example = self.example, None
        if example is None:
            return
        if example.table is not None:
            return  # a table of its own, placed when its header was read
        if not example.keys:
            raise ShapeError(f"{self.where(number)}: the example above holds no key and no table")
        if not self.run:
            self.run_text = self.example_text
        self.run_examples.append(example)

    def read_key(self, m, number: int) -> Key:
        value, parsed, after = split_value(m.group(1), m.group(2), self.where(number))
        return Key(m.group(1), value, parsed, [after] if after else [], number)

    def example_line(self, line: str, number: int):
        example = self.example
        km, tm = KEY.match(line), TABLE.match(line)
        body = comment_body(line)
        if tm and tm.group(1):
            _, opening, name, closing, after = tm.groups()
            if example.table is None and not example.raw:
                # An example that is a table: its own subsection, introduced by the text above it.
                if self.run:
                    self.end_run(number)
                table = Table(name, opening == "[[", self.example_text + ([after] if after else []), [],
                              example, [], number)
                example.table = table
                if self.home is None:
                    raise ShapeError(f"{self.where(number)}: an example table before any [section]")
                self.home.children.append(table)
                self.tables.append(table)
            elif example.table is None or name != example.table.name:
                raise ShapeError(f"{self.where(number)}: a table header inside an example of other lines: '{line}'")
            example.raw.append(body)
            return
        example.raw.append(body)
        if km:
            example.keys.append(self.read_key(km, number))
        elif near_miss(line):
            raise ShapeError(f"{self.where(number)}: '{line}' looks like a key but is not '# key = value'")

    def line(self, line: str, number: int):
        stripped = line.strip()
        if not stripped:
            self.end_example(number)
            self.end_run(number)
            self.last_key = None
            text = self.take_text()
            if text:
                self.add(Prose(text), number)
            return
        if self.example is not None:
            if line.startswith("#") and not line.startswith(EXAMPLE):
                self.example_line(line, number)
                return
            self.end_example(number)  # an uncommented line, or the next example, ends it
        if line.startswith(EXAMPLE):
            self.last_key = None
            self.example = Example(comment_body(line).strip(), [], [])
            self.example_text = [] if self.run else self.take_text()
            if self.run and (self.pending or self.par):
                raise ShapeError(f"{self.where(number)}: text between keys and their example")
            return
        tm = TABLE.match(line)
        if tm:
            commented, opening, name, closing, after = tm.groups()
            if len(opening) != len(closing):
                raise ShapeError(f"{self.where(number)}: unbalanced table header '{line}'")
            if commented and opening == "[[":
                raise ShapeError(
                    f"{self.where(number)}: the array of tables {opening}{name}{closing} outside an example: "
                    "an array has no default entries, so put a line '# Example...:' above it")
            self.end_run(number)
            self.last_key = None
            intro = self.take_text()
            if after:
                intro.append(after)
            table = Table(name, opening == "[[", intro, [], None, [], number)
            self.tables.append(table)
            self.home = table
            return
        km = KEY.match(line)
        if km:
            if not self.run:
                self.run_text = self.take_text()
            key = self.read_key(km, number)
            self.run.append(key)
            self.last_key = key
            return
        if not line.startswith("#"):
            raise ShapeError(f"{self.where(number)}: '{line}' is neither a comment, a '# key = value' nor a table header")
        body = comment_body(line)
        if self.last_key is not None and body.lstrip().startswith("#"):
            self.last_key.text.append(body.lstrip()[1:].strip())  # the key's own text, continued
            return
        if near_miss(line):
            raise ShapeError(f"{self.where(number)}: '{line}' looks like a key or a table but is not '# key = value' or '# [table]'")
        self.last_key = None
        self.end_run(number)
        if not body.strip():
            if self.par:
                self.pending.append(" ".join(self.par))  # a lone "#": a new paragraph
                self.par = []
        else:
            self.par.append(body.strip())

    def finish(self, number: int) -> list[Table]:
        self.line("", number)
        if not self.tables:
            raise ShapeError(f"{self.source}: no [section] found")
        return self.tables


def parse(text: str, source: str) -> list[Table]:
    reader = Reader(source)
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        reader.line(line, number)
    return reader.finish(len(lines) + 1)


# ---- the contract: the reading above holds every key of the file, in its table, with its value --

def table_path(name: str) -> str:
    doc = tomllib.loads(f"[{name}]")
    path = []
    while doc:
        ((k, v),) = doc.items()
        path.append(k)
        doc = v
    return ".".join(path)


def flatten(value, prefix: str, out: dict):
    if isinstance(value, dict):
        for k, v in value.items():
            flatten(v, f"{prefix}.{k}" if prefix else k, out)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for v in value:
            flatten(v, prefix + "[]", out)
    else:
        out.setdefault(prefix, []).append(value)


def uncommented(text: str, examples: bool) -> tuple[str, int]:
    """The file with its defaults (examples=False) or its examples uncommented, as
    config_tooling_test and packaged_config_test uncomment it; and how many lines that was."""
    key_line = re.compile(r"^# ([a-z0-9_]+ = .*)$")
    table_line = re.compile(r"^# (\[\[?[a-z0-9_.]+(\.\"[^\"]+\")?\]\]?)( +#.*)?$")
    out, count, in_example = [], 0, False
    for line in text.splitlines():
        if line.startswith(EXAMPLE):
            in_example = True
        if not line:
            in_example = False
        m = key_line.match(line) or table_line.match(line)
        if m and in_example == examples:
            out.append(m.group(1))
            count += 1
        else:
            out.append(line)
    return "\n".join(out), count


def check_contract(text: str, source: str, tables: list[Table]):
    defaults: dict = {}
    examples: dict = {}
    lines = {False: 0, True: 0}
    for t in tables:
        path = table_path(t.name) + ("[]" if t.array else "")
        if t.example is None:
            if t.line and not text.splitlines()[t.line - 1].startswith("["):
                lines[False] += 1  # a commented sub-table header
            for item in t.items:
                if not isinstance(item, Entry):
                    continue
                for k in item.keys:
                    defaults.setdefault(f"{path}.{k.name}", []).append(k.parsed)
                    lines[False] += 1
                for e in item.examples:
                    for k in e.keys:
                        examples.setdefault(f"{path}.{k.name}", []).append(k.parsed)
                        lines[True] += 1
        else:
            lines[True] += sum(1 for r in t.example.raw if TABLE.match("# " + r))
            for k in t.example.keys:
                examples.setdefault(f"{path}.{k.name}", []).append(k.parsed)
                lines[True] += 1
    for view, model in ((False, defaults), (True, examples)):
        what = "examples" if view else "defaults"
        toml, count = uncommented(text, view)
        try:
            read: dict = {}
            flatten(tomllib.loads(toml), "", read)
        except tomllib.TOMLDecodeError as e:
            raise ShapeError(f"{source}: with its {what} uncommented it is not TOML: {e}") from None
        if read != model:
            missing = sorted(set(read) - set(model))
            extra = sorted(set(model) - set(read))
            differ = sorted(p for p in set(read) & set(model) if read[p] != model[p])
            raise ShapeError(
                f"{source}: the {what} read differ from tomllib's reading (did the file's shape change?): "
                f"not read: {missing}; read but not in the file: {extra}; other values: {differ}")
        if count != lines[view]:
            raise ShapeError(f"{source}: {count} lines of {what} are uncommented by the tests, {lines[view]} were read")


# ---- rendering: pandoc Markdown, with raw man for tag lines that pandoc has no syntax for -------

PUNCT = set(string.punctuation)


def md_plain(s: str) -> str:
    """Markdown for literal text: every ASCII punctuation character escaped, so nothing in a comment
    (*, _, $, @, \\, <, quotes) is read as markup, math, a citation or raw TeX."""
    return "".join("\\" + c if c in PUNCT else c for c in s)


def md_text(s: str) -> str:
    """Markdown for comment text: `code` spans stay code, everything else is literal."""
    out, pos = [], 0
    for m in re.finditer(r"`([^`]+)`", s):
        out.append(md_plain(s[pos : m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(md_plain(s[pos:]))
    return "".join(out)


def roff_text(s: str) -> str:
    # Inside a line that starts with \f[B] (never a control line) only the backslash is special.
    return s.replace("\\", "\\[rs]")


def sentence(s: str) -> str:
    s = s.strip()
    return s if not s or s[-1] in ".:;!?)" else s + "."


def code_block(lines: list[str]) -> list[str]:
    fence = "~~~~" if any(l.lstrip().startswith("```") for l in lines) else "```"
    return [fence] + [l.rstrip() for l in lines] + [fence]


def render(tables: list[Table]) -> tuple[str, int]:
    out: list[str] = []
    shown = 0

    def tag_roff(name: str, value: str | None) -> str:
        return f"\\f[B]{name}\\f[R]" + (f" = {roff_text(value)}" if value is not None else "")

    def tag_md(name: str, value: str | None) -> str:
        return f"**{md_plain(name)}**" + (f" = {md_plain(value)}" if value is not None else "")

    def render_table(t: Table):
        nonlocal shown
        out.extend([f"## {md_plain(t.heading())}", ""])
        for p in t.intro:
            out.extend([md_text(sentence(p)), ""])
        if t.example is not None:
            out.extend([md_text(t.example.label), ""])
            out.extend(code_block(t.example.raw))
            out.append("")
            shown += len(t.example.keys)
        for item in t.items:
            if isinstance(item, Prose):
                for p in item.paragraphs:
                    out.extend([md_text(p), ""])
                continue
            tags = [(k.name, k.value) for k in item.keys] + [(n, None) for n in item.example_only()]
            body: list[list[str]] = [[md_text(sentence(p))] for p in item.paragraphs]
            body += [[md_text(sentence(" ".join(k.text)))] for k in item.keys if k.text]
            for e in item.examples:
                body.append([md_text(e.label)])
                body.append(code_block(e.raw))
                shown += len(e.keys)
            shown += len(item.keys)
            if not body:
                # Keys without text: one tag line each, as a compact list.
                out.append("```{=man}")
                for i, (name, value) in enumerate(tags):
                    out.extend([".TP", tag_roff(name, value)])
                    if i == 0 and len(tags) > 1:
                        out.append(".PD 0")
                if len(tags) > 1:
                    out.append(".PD")
                out.extend(["```", ""])
                continue
            if len(tags) > 1:
                # Several keys share the text: each key's tag on a line of its own, the text after the
                # last (pandoc's definition lists have one term; .PD 0 keeps the tags together).
                out.append("```{=man}")
                for name, value in tags[:-1]:
                    out.extend([".TP", tag_roff(name, value), ".PD 0"])
                out.extend(["```", ""])
            out.append(tag_md(*tags[-1]))
            for i, block in enumerate(body):
                lead = ":   " if i == 0 else "    "
                out.append(lead + block[0])
                out.extend("    " + l for l in block[1:])
                out.append("")
                if i == 0 and len(tags) > 1 and len(body) > 1:
                    # the tags are together; the text's own paragraphs are spaced as usual
                    out.extend(["    ```{=man}", "    .PD", "    ```", ""])
            if len(tags) > 1:
                out.extend(["```{=man}", ".PD", "```", ""])
        for child in t.children:
            render_table(child)

    for t in tables:
        if t.example is None:  # an example table is shown after the table it follows
            render_table(t)
    return "\n".join(out), shown


def count_keys(tables: list[Table]) -> int:
    n = 0
    for t in tables:
        if t.example is not None:
            n += len(t.example.keys)
        for item in t.items:
            if isinstance(item, Entry):
                n += len(item.keys) + sum(len(e.keys) for e in item.examples)
    return n


def convert(config_text: str, config_name: str, header: str) -> str:
    tables = parse(config_text, config_name)
    check_contract(config_text, config_name, tables)
    body, shown = render(tables)
    total = count_keys(tables)
    key_lines = sum(1 for line in config_text.splitlines() if KEY.match(line))
    if not shown == total == key_lines:
        raise ShapeError(f"{config_name}: {key_lines} key lines, {total} read, {shown} shown")
    if header.count(MARKER) != 1:
        raise ShapeError(f"the header must hold the line {MARKER!r} once")
    return header.replace(MARKER, body)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--header", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--name", help="the config's name in messages (default: --config)")
    args = ap.parse_args()
    with open(args.config, encoding="utf-8") as f:
        config_text = f.read()
    with open(args.header, encoding="utf-8") as f:
        header = f.read()
    try:
        page = convert(config_text, args.name or args.config, header)
    except ShapeError as e:
        print(f"config_to_man: {e}", file=sys.stderr)
        return 1
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
