"""The layer check itself: it must fail on the includes it exists to stop (run: python3 -m unittest)."""

import pathlib
import tempfile
import unittest

import check_layers

ARCHITECTURE = """# Architecture

```layers
vocabulary   the words
state        what survives
engine       deciding
(root)       daemon.cpp
```
"""


class CheckLayersTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.dir.name)
        (self.root / "ARCHITECTURE.md").write_text(ARCHITECTURE)
        self.write("vocabulary/action.hpp", "#include <string>\n")
        self.write("state/journal.hpp", '#include "vocabulary/action.hpp"\n#include "auto_resume/protocol.hpp"\n')
        self.write("state/journal.cpp", '#include "journal.hpp"\n')
        self.write("engine/engine.cpp", '#include "state/journal.hpp"\n#include "version.hpp"\n')
        self.write("daemon.cpp", '#include "engine/engine.hpp"\n#include "vocabulary/action.hpp"\n')
        self.write("engine/engine.hpp", "")

    def tearDown(self):
        self.dir.cleanup()

    def write(self, relative, text):
        path = self.root / "healthd" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def test_includes_that_go_down_pass(self):
        self.assertEqual(check_layers.check(self.root), [])

    def test_an_upward_include_fails_naming_file_line_and_folders(self):
        self.write("state/journal.cpp", '#include "journal.hpp"\n#include "engine/engine.hpp"\n')
        problems = check_layers.check(self.root)
        self.assertEqual(len(problems), 1)
        self.assertIn("healthd/state/journal.cpp:2", problems[0])
        self.assertIn('state includes "engine/engine.hpp" of engine, a folder above it', problems[0])

    def test_a_relative_include_of_another_folder_is_placed_by_where_it_resolves(self):
        self.write("state/journal.cpp", '#include "../engine/engine.hpp"\n')
        self.assertEqual(len(check_layers.check(self.root)), 1)

    def test_the_bottom_folder_includes_nothing_of_the_project(self):
        self.write("vocabulary/action.cpp", '#include "action.hpp"\n#include "auto_resume/protocol.hpp"\n')
        problems = check_layers.check(self.root)
        self.assertEqual(len(problems), 1)
        self.assertIn("the bottom folder includes nothing of the project", problems[0])

    def test_a_folder_not_in_the_order_fails(self):
        self.write("telemetry/metrics.cpp", '#include "state/journal.hpp"\n')
        problems = check_layers.check(self.root)
        self.assertEqual(problems, ["healthd/telemetry/: not in ARCHITECTURE.md's layers block (place it in the order)"])

    def test_an_include_that_resolves_nowhere_is_an_error_not_a_pass(self):
        self.write("engine/engine.cpp", '#include "nowhere.hpp"\n')
        with self.assertRaises(check_layers.LayersError):
            check_layers.check(self.root)

    def test_no_layers_block_is_an_error(self):
        (self.root / "ARCHITECTURE.md").write_text("# Architecture\n")
        with self.assertRaises(check_layers.LayersError):
            check_layers.check(self.root)


if __name__ == "__main__":
    unittest.main()
