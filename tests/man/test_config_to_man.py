"""docs/man/config_to_man.py: the sample config's text may change freely; its shape may not change
without the converter failing loudly (never a key dropped in silence)."""

import importlib.util
import os
import re
import sys
import unittest

SOURCE = os.environ.get("AR_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
_spec = importlib.util.spec_from_file_location("config_to_man", os.path.join(SOURCE, "docs/man/config_to_man.py"))
c2m = importlib.util.module_from_spec(_spec)
sys.modules["config_to_man"] = c2m  # dataclasses look their module up
_spec.loader.exec_module(c2m)

with open(os.path.join(SOURCE, "packaging/healthd.toml"), encoding="utf-8") as _f:
    SAMPLE = _f.read()
HEADER = "---\ntitle: T\nsection: 5\n---\n\n# KEYS\n\n" + c2m.MARKER + "\n"
KEY = re.compile(r"^# ([a-z0-9_]+) = ", re.M)


def convert(text):
    return c2m.convert(text, "healthd.toml", HEADER)


def keys_shown(page):
    # default keys as **name** (Markdown) or \f[B]name\f[R] (raw man), examples inside code blocks
    return set(re.findall(r"\*\*([a-z0-9\\_]+)\*\*", page.replace("\\_", "_"))) | set(
        re.findall(r"\\f\[B\]([a-z0-9_]+)\\f\[R\]", page)) | set(re.findall(r"^ *([a-z0-9_]+) = ", page, re.M))


class Sample(unittest.TestCase):
    def test_every_key_of_the_sample_is_shown(self):
        page = convert(SAMPLE)
        self.assertGreater(len(KEY.findall(SAMPLE)), 80)
        self.assertEqual(set(KEY.findall(SAMPLE)) - keys_shown(page), set())

    def test_other_comment_text_changes_nothing_but_the_text(self):
        # Every line of text replaced: the same keys come out.
        def reword(m):
            line = m.group(0)
            if KEY.match(line) or line.startswith("# Example") or re.match(r"^# \[", line) or line.strip() == "#":
                return line
            return "# Some other words, with a = sign and `code`, ending here."
        reworded = re.sub(r"^# (?![a-z0-9_]+ = ).*$", reword, SAMPLE, flags=re.M)
        self.assertNotEqual(reworded, SAMPLE)
        self.assertEqual(keys_shown(convert(reworded)), keys_shown(convert(SAMPLE)))

    def test_markup_in_comments_stays_text(self):
        page = convert("[daemon]\n# A *b* _c_ $1 @d <e> \\1 \\xNN -- `x*y`\n# socket = \"/s\"\n")
        self.assertIn("A \\*b\\* \\_c\\_ \\$1 \\@d \\<e\\> \\\\1 \\\\xNN \\-\\- `x*y`", page)


class LoudFailures(unittest.TestCase):
    def fails(self, text, *words):
        with self.assertRaises(c2m.ShapeError) as e:
            convert(text)
        for w in words:
            self.assertIn(w, str(e.exception))

    def test_a_key_without_the_space_after_the_hash(self):
        self.fails(SAMPLE.replace("# max_resumes = 3", "#max_resumes = 3"), "healthd.toml:", "#max_resumes = 3")

    def test_a_key_without_spaces_around_the_equals_sign(self):
        self.fails(SAMPLE.replace("# max_resumes = 3", "# max_resumes=3"), "max_resumes=3")

    def test_a_value_that_is_not_toml(self):
        self.fails(SAMPLE.replace("# max_resumes = 3", "# max_resumes = three"), "max_resumes = three")

    def test_a_key_twice_in_one_table(self):
        self.fails(SAMPLE.replace("# max_resumes = 3", "# max_resumes = 3\n# max_resumes = 4"), "not TOML")

    def test_an_array_of_tables_outside_an_example(self):
        self.fails(SAMPLE.replace("# Example (not a default; uncomment and adapt):\n# [[policy.hook]]",
                                  "# [[policy.hook]]"), "[[policy.hook]]", "Example")

    def test_an_example_without_keys(self):
        self.fails("[daemon]\n# Example:\n# nothing here\n", "no key")

    def test_a_table_inside_an_example_of_keys(self):
        self.fails("[daemon]\n# Example:\n# socket = \"/s\"\n# [checks.gpu]\n# enabled = true\n", "table header inside")

    def test_a_line_that_is_not_a_comment(self):
        self.fails("[daemon]\nsocket = \"/s\"\n", "neither a comment")

    def test_a_header_without_its_marker(self):
        with self.assertRaises(c2m.ShapeError):
            c2m.convert(SAMPLE, "healthd.toml", "# KEYS\n")


if __name__ == "__main__":
    unittest.main()
