"""Shared helpers for the docgen tests: paths and running the docgen command."""

import os
import subprocess
import sys
import time

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
DOCGEN_DIR = os.path.dirname(TESTS_DIR)
DOCGEN = os.path.join(DOCGEN_DIR, "docgen")
EXAMPLES = os.path.join(DOCGEN_DIR, "examples")
EXAMPLE_SPEC = os.path.join(EXAMPLES, "report.json")
MAKE_LONG_REPORT = os.path.join(EXAMPLES, "make_long_report.py")
FORMATS = ("docx", "pptx", "xlsx", "pdf")

sys.path.insert(0, DOCGEN_DIR)
sys.path.insert(0, TESTS_DIR)


def run_docgen(*args, env=None, timeout=300, stdin=None):
    """Runs the docgen command; returns (exit status, stderr, seconds)."""
    start = time.monotonic()
    proc = subprocess.run([DOCGEN, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, input=stdin)
    return proc.returncode, proc.stderr, time.monotonic() - start


def dir_entries(path):
    return sorted(os.listdir(path))
