#!/usr/bin/env python3
"""Checks that the man pages built from docs/man/ have not drifted from what they document.

  check_pages.py options PAGE BINARY [--subcommands]  every long option of BINARY --help (and of
                                                      each subcommand's --help) is in PAGE
  check_pages.py plugin PAGE PLUGIN_DIR               every option the SPANK plugin registers, every
                                                      plugstack argument it parses and every
                                                      variable it sets for a job is in PAGE
  check_pages.py keys PAGE CONFIG                     every key and table of the sample config is in
                                                      PAGE, in its table's subsection, as written
  check_pages.py render PAGE...                       each page renders without a warning, its NAME
                                                      line is "name \\- description", and its .gz
                                                      is the page, compressed reproducibly
  check_pages.py install BUILD_DIR PATHS PAGE...      an install (as the packages do it) puts every
                                                      file the pages name where they say

Exit 0: no drift; 1: drift (each finding on a line of its own); 77: what is checked is not built
(a build of some targets only, such as the asan and tsan presets), reported as skipped.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def skip_unless_built(*paths: str):
    for p in paths:
        if not os.path.exists(p):
            print(f"SKIPPED: {p} is not built (this build made only some targets); build `all` to check the pages")
            sys.exit(SKIP)


def rendered(page: str) -> str:
    """The page as plain text, wide (few line breaks), each typographic character as ASCII."""
    out = subprocess.run(["groff", "-man", "-Tutf8", "-P-cbou", "-rLL=200n", page],
                         check=True, capture_output=True, text=True).stdout
    for fancy, plain in (("\u2010", "-"), ("\u2212", "-"), ("\u2018", "'"), ("\u2019", "'"),
                         ("\u201c", '"'), ("\u201d", '"'), ("\u00a0", " ")):
        out = out.replace(fancy, plain)
    return out


def body_indent(text: str) -> int:
    """The columns groff indents a page's body and its tags by: 7 up to groff 1.23 (Debian 12, 13),
    5 from 1.24 (Debian testing). Read off the page: the indent of the line after NAME."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "NAME":
            for after in lines[i + 1:]:
                if after.strip():
                    return len(after) - len(after.lstrip(" "))
    return 7


def flat(text: str) -> str:
    # hyphenation is off in the pages, so a line ending in "-" broke at a real hyphen
    return re.sub(r"\s+", " ", re.sub(r"-\n\s*", "-", text))


def sections(text: str) -> dict[str, str]:
    """The page's sections (.SH, at column 0) and subsections (.SS, at column 3) by heading."""
    out: dict[str, str] = {}
    current_sh = current_ss = None
    indent = body_indent(text)
    for line in text.splitlines():
        if re.match(r"^[A-Z][A-Z0-9 ]*$", line):
            current_sh, current_ss = line.strip(), None
            out.setdefault(current_sh, "")
            continue
        # .SS headings: indented, less than the body (3 columns with groff 1.22 and 1.23)
        lead = len(line) - len(line.lstrip(" "))
        if line.strip() and 0 < lead < indent:
            current_ss = line.strip()
            out.setdefault(current_ss, "")
        if current_sh:
            out[current_sh] += line + "\n"
        if current_ss:
            out[current_ss] += line + "\n"
    return out


def has_word(text: str, word: str) -> bool:
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", flat(text)) is not None


def long_options(help_text: str) -> list[str]:
    """The long options in a CLI11 --help: the first column of its option lines."""
    found = []
    for line in help_text.splitlines():
        # "-s,--socket" (CLI11 2.1, Debian 12) or "-s,     --socket" (CLI11 2.5, Debian testing)
        m = re.match(r"^\s+((?:-\w,\s*)?--[\w-]+(?:,--[\w-]+)*)", line)
        if m:
            found += re.findall(r"--[\w-]+", m.group(1))
    return found


def subcommands(help_text: str) -> list[str]:
    names, inside = [], False
    for line in help_text.splitlines():
        if line.lower().startswith("subcommands:"):  # "SUBCOMMANDS:" from CLI11 2.5
            inside = True
            continue
        if inside:
            m = re.match(r"^  (\w[\w-]*)\s", line)
            if m:
                names.append(m.group(1))
            elif line and not line.startswith(" "):
                inside = False
    return names


def run_help(binary: str, *args: str) -> str:
    r = subprocess.run([binary, *args, "--help"], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{binary} {' '.join(args)} --help exited {r.returncode}: {r.stderr}")
    return r.stdout


def check_options(page: str, binary: str, with_subcommands: bool) -> list[str]:
    skip_unless_built(page, binary)
    text = rendered(page)
    indent = body_indent(text)
    name = os.path.basename(binary)
    problems, checked = [], 0
    top = run_help(binary)
    helps = [("", top)]
    if with_subcommands:
        subs = subcommands(top)
        if not subs:
            problems.append(f"{name} --help lists no subcommands: did its help format change?")
        for sub in subs:
            helps.append((sub, run_help(binary, sub)))
            checked += 1
            # each subcommand is a tag of COMMANDS
            if not re.search(r"^ {%d}" % indent + re.escape(sub) + r"\b", sections(text).get("COMMANDS", ""), re.M):
                problems.append(f"{os.path.basename(page)}: the command '{sub}' ({name} --help) is not in COMMANDS")
    # Each option is a tag of OPTIONS (a line at the tag indent), not merely mentioned somewhere.
    tags = "\n".join(re.findall(r"^ {%d}\S.*$" % indent, sections(text).get("OPTIONS", ""), re.M))
    for sub, help_text in helps:
        opts = long_options(help_text)
        if not opts:
            problems.append(f"{name} {sub} --help shows no long option: did its help format change?")
        for opt in opts:
            checked += 1
            if not has_word(tags, opt):
                problems.append(f"{os.path.basename(page)}: {opt} ({name} {sub} --help) is not an entry of OPTIONS"
                                .replace("  ", " "))
    # a default shown by --help (the config file, the socket) is the page's too
    for default in re.findall(r"(/[\w./-]+\.(?:toml|sock))", top):
        if default not in flat(text):
            problems.append(f"{os.path.basename(page)}: the default {default} ({name} --help) is not in the page")
    print(f"{name}: {checked} options and commands checked against {os.path.basename(page)}")
    return problems


def check_plugin(page: str, plugin_dir: str) -> list[str]:
    skip_unless_built(page)
    text = rendered(page)
    secs = sections(text)
    src = ""
    for f in sorted(os.listdir(plugin_dir)):
        if f.endswith((".cpp", ".hpp")):
            with open(os.path.join(plugin_dir, f), encoding="utf-8") as fh:
                src += fh.read() + "\n"
    constants = dict(re.findall(r'inline constexpr const char\* (k\w+) = "([^"]*)"', src))
    problems = []
    # The options: each struct spank_option's first field, a literal or a constant of options.hpp.
    options = []
    for m in re.finditer(r"struct spank_option \w+ = \{\s*const_cast<char\*>\(([^)]+)\)", src):
        first = m.group(1).strip()
        if first.startswith('"'):
            options.append(first.strip('"'))
        else:
            name = first.split("::")[-1]
            if name not in constants:
                problems.append(f"plugin/: the option name {first} is not a constant this test can read")
            else:
                options.append(constants[name])
    registered = re.search(r"for \(auto\* opt : \{([^}]*)\}\)", src)
    if registered is None or len(re.findall(r"&\w+", registered.group(1))) != len(options):
        problems.append("plugin/: the options registered (spank_option_register loop) are not the spank_option "
                        "tables this test found: update tests/man/check_pages.py")
    # The plugstack arguments: each key the parser compares with.
    arguments = re.findall(r'key == "(\w+)"', src)
    # The environment: every variable set or unset for a task.
    variables = sorted(set(re.findall(r'spank_(?:un)?setenv\(sp, "(\w+)"', src)))
    if not options or not arguments or not variables:
        problems.append(f"plugin/: found options {options}, arguments {arguments}, variables {variables}: "
                        "did the plugin's source change shape? update tests/man/check_pages.py")
    indent = body_indent(rendered(page))

    def tags(section: str) -> str:
        return "\n".join(re.findall(r"^ {%d}\S.*$" % indent, secs.get(section, ""), re.M))

    for opt in options:
        if not has_word(tags("OPTIONS"), "--" + opt):
            problems.append(f"{os.path.basename(page)}: the option --{opt} (plugin/) is not an entry of OPTIONS")
    for arg in arguments:
        if not re.search(r"^ {%d}" % indent + re.escape(arg) + "=", tags("PLUGSTACK ARGUMENTS"), re.M):
            problems.append(f"{os.path.basename(page)}: the plugstack argument {arg}= (plugin/) is not an entry of "
                            "PLUGSTACK ARGUMENTS")
    for var in variables:
        if not has_word(tags("ENVIRONMENT"), var):
            problems.append(f"{os.path.basename(page)}: the variable {var} (plugin/) is not an entry of ENVIRONMENT")
    print(f"auto_resume.so: {len(options)} options, {len(arguments)} plugstack arguments, {len(variables)} "
          f"variables checked against {os.path.basename(page)}")
    return problems


def check_keys(page: str, config: str) -> list[str]:
    """Read the sample config as the unit tests read it (config_tooling_test's regular expressions),
    independently of the converter, and find each key in the subsection of its table."""
    skip_unless_built(page)
    secs = sections(rendered(page))
    header = re.compile(r"^#? ?(\[\[?[a-z0-9_.]+\]\]?)( +#.*)?$")
    key_line = re.compile(r"^# ([a-z0-9_]+) = (.*)$")
    table = None
    problems, keys, tables = [], 0, 0
    with open(config, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            line = line.rstrip("\n")
            m = header.match(line)
            if m:
                table = m.group(1)
                tables += 1
                if table not in secs:
                    problems.append(f"{config}:{number}: the table {table} has no subsection in {os.path.basename(page)}")
                continue
            m = key_line.match(line)
            if m:
                keys += 1
                name, rest = m.groups()
                value = re.split(r"\s+#", rest)[0].strip()
                shown = f"{name} = {value}"
                if table is None or table not in secs:
                    problems.append(f"{config}:{number}: {shown} is in no table the page has")
                elif shown not in flat(secs[table]):
                    problems.append(f"{config}:{number}: '{shown}' is not in {table} of {os.path.basename(page)}")
    if keys < 80 or tables < 10:
        problems.append(f"{config}: only {keys} keys and {tables} tables read: did the file's shape change?")
    print(f"{config}: {keys} keys in {tables} tables checked against {os.path.basename(page)}")
    return problems


def check_render(pages: list[str]) -> list[str]:
    skip_unless_built(*pages, *[p + ".gz" for p in pages])
    problems = []
    env = dict(os.environ, LC_ALL="C.UTF-8", MANROFFSEQ="", MANWIDTH="80")
    for page in pages:
        name = os.path.basename(page)
        # What lintian runs (manpage-has-errors-from-man), and groff's own strictest check.
        for cmd in (["man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", page],
                    ["groff", "-man", "-Tutf8", "-ww", "-z", page]):
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if r.returncode != 0 or r.stderr.strip():
                problems.append(f"{name}: {' '.join(cmd[:2])} warns: {r.stderr.strip() or 'exit ' + str(r.returncode)}")
        with open(page, encoding="utf-8") as f:
            roff = f.read()
        # NAME: one line "name \- description" (what lexgrog and whatis read)
        m = re.search(r"^\.SH NAME\n(?:\.PP\n)?((?:[^.\n][^\n]*\n)+)\.SH ", roff, re.M)
        whatis = " ".join(m.group(1).split()) if m else None
        base = name.rsplit(".", 1)[0]
        if not whatis or not re.fullmatch(re.escape(base) + r" \\- \S.*", whatis):
            problems.append(f"{name}: the NAME section is not one paragraph '{base} \\- description': "
                            f"{(whatis or roff[roff.find('.SH NAME'):][:200])!r}")
        section = name.rsplit(".", 1)[1]
        if not re.search(r'^\.TH "' + re.escape(base.upper()) + r'" "' + section + r'" ', roff, re.M):
            problems.append(f"{name}: .TH does not name {base.upper()} in section {section}")
        if shutil.which("lexgrog"):
            r = subprocess.run(["lexgrog", page], capture_output=True, text=True)
            if r.returncode != 0 or f'"{base} - ' not in r.stdout:
                problems.append(f"{name}: lexgrog cannot read its whatis line: {r.stdout.strip()} {r.stderr.strip()}")
        # The .gz is this page, with no name or time stamp in its header (gzip -n: reproducible).
        with open(page + ".gz", "rb") as f:
            data = f.read()
        if gzip.decompress(data).decode("utf-8") != roff:
            problems.append(f"{name}.gz is not {name}, compressed (stale?)")
        flags, mtime = data[3], int.from_bytes(data[4:8], "little")
        if flags & 0x08 or mtime != 0:
            problems.append(f"{name}.gz holds a file name or a time stamp (not gzip -n)")
        if data[8] != 2:
            problems.append(f"{name}.gz is not compressed with gzip -9")
    print(f"{len(pages)} pages rendered and checked")
    return problems


def check_install(build: str, paths_file: str, pages: list[str]) -> list[str]:
    with open(paths_file, encoding="utf-8") as f:
        paths = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
    skip_unless_built(*pages, *[p + ".gz" for p in pages])
    problems = []
    texts = {os.path.basename(p): flat(rendered(p)) for p in pages}
    # Each page names these files (where the packages put them).
    named = {
        "healthd.8": [paths["healthd"], "/etc/healthd/healthd.toml"],
        "healthctl.1": [paths["healthctl"]],
        "auto_resume.8": [paths["plugin"], "/etc/slurm/plugstack.conf.d/auto-resume.conf"],
        "healthd.toml.5": ["/etc/healthd/healthd.toml"],
    }
    with tempfile.TemporaryDirectory() as root:
        # As cpack installs: under the packages' prefix, into a staging directory.
        r = subprocess.run(["cmake", "--install", build, "--prefix", paths["prefix"]],
                           capture_output=True, text=True, env=dict(os.environ, DESTDIR=root))
        if r.returncode != 0:
            missing = re.search(r"file INSTALL cannot find\s+\"([^\"]+)\"", r.stderr)
            if missing:
                skip_unless_built(missing.group(1))
            return [f"cmake --install failed: {r.stderr.strip()}"]
        for page, files in named.items():
            if page not in texts:
                continue
            for path in files:
                if path not in texts[page]:
                    problems.append(f"{page} does not name {path}, where the packages install it")
                if not os.path.exists(root + path):
                    problems.append(f"{page} names {path}, but an install puts nothing there")
        # The plugstack line the package installs names the plugin the page names.
        conf = root + "/etc/slurm/plugstack.conf.d/auto-resume.conf"
        if os.path.exists(conf):
            with open(conf, encoding="utf-8") as f:
                line = [l for l in f if l.startswith("optional ")]
            if not line or line[0].split()[1] != paths["plugin"]:
                problems.append(f"the packaged plugstack line {line} does not name {paths['plugin']}")
            elif line[0].strip() not in texts.get("auto_resume.8", ""):
                problems.append(f"auto_resume.8 does not show the packaged plugstack line {line[0].strip()!r}")
        # The pages themselves, gzipped, in manN.
        for page in texts:
            target = os.path.join(root + paths["prefix"], paths["mandir"], "man" + page.rsplit(".", 1)[1], page + ".gz")
            if not os.path.exists(target):
                problems.append(f"an install puts no {page}.gz at {target[len(root):]}")
    print(f"install under {paths['prefix']}: {sum(len(v) for v in named.values())} named files and {len(texts)} pages checked")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    what, args = argv[1], argv[2:]
    if what == "options":
        problems = check_options(args[0], args[1], "--subcommands" in args)
    elif what == "plugin":
        problems = check_plugin(args[0], args[1])
    elif what == "keys":
        problems = check_keys(args[0], args[1])
    elif what == "render":
        problems = check_render(args)
    elif what == "install":
        problems = check_install(args[0], args[1], args[2:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for p in problems:
        print("DRIFT: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
