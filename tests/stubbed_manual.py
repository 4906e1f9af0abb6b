"""`manual` with test_edition.py's stub build and rebuild, run as a subprocess by the kill tests.

A process that kills itself (MANUAL_TEST_KILL_AT) cannot be the test's own: this one runs the command line
exactly as `.venv/bin/manual` does, only with the tiny stub build in place of the real one.
"""

import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: tests is a package

from build_tools.cli import main  # noqa: E402
from build_tools.editions import edition  # noqa: E402
from tests.editions import test_edition  # noqa: E402

# Ctrl-C as in a terminal: a shell that starts a job in the background (as a CI runner's may) starts it with
# SIGINT ignored, and Python then raises no KeyboardInterrupt.
signal.signal(signal.SIGINT, signal.default_int_handler)
edition.run_build = test_edition.stub_build
edition.rebuild = test_edition.stub_rebuild
sys.exit(main(sys.argv[1:]))
