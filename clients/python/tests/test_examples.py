"""The Python examples under examples/python run as their docs say, offline,
against the server go test started, and remember across sessions."""

import os
import subprocess
import sys
import unittest
from pathlib import Path

from tests.servers import URL, ADMIN_KEY

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "python"
REMEMBERED = 'assistant: You told me: "My sister Inês moved to Porto last spring."'


def extra_missing(module: str) -> bool:
    try:
        __import__(module)
        return False
    except ImportError:
        return True


@unittest.skipUnless(URL, "HECTOR_TEST_URL is not set: go test ./clients/python starts a server and sets it")
class Examples(unittest.TestCase):
    def run_example(self, name: str) -> str:
        env = dict(os.environ, HECTOR_API_KEY=ADMIN_KEY or "", PYTHONPATH=str(Path(__file__).resolve().parents[1]))
        done = subprocess.run([sys.executable, str(EXAMPLES / name), URL], env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    @unittest.skipIf(extra_missing("google.adk"), "the adk extra is not installed")
    def test_adk_remembers(self):
        self.assertIn(REMEMBERED, self.run_example("adk_remembers.py"))

    @unittest.skipIf(extra_missing("langgraph.graph"), "the langgraph extra is not installed")
    def test_langgraph_remembers(self):
        self.assertIn(REMEMBERED, self.run_example("langgraph_remembers.py"))
