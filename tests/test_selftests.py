"""The suite's own tools checked without a JVM: a reader that cannot fail
proves nothing, and the docs the tests are described in must hold together.

    parser_selftest        tests/hprof_text.py on a hand-written sample and
                           broken variants (tests/parser_selftest.py)
    hprof_reader_selftest  tests/hprof_reader.py --selftest: synthetic files of
                           both id sizes, every error class, every truncation
    docs_check             scripts/check-docs: README's length and Quick
                           start, every link and anchor resolving, no
                           timestamps or commit hashes in prose
"""

import os
import subprocess
import sys

import parser_selftest
from run import ROOT, TESTS_DIR


def test_parser_selftest():
    parser_selftest.main()


def test_hprof_reader_selftest(nojdk_ctx):
    """The binary reader's own checks on synthetic files (both id sizes, every
    error class, every truncation point): a reader that can't fail proves nothing."""
    r = subprocess.run([sys.executable, os.path.join(TESTS_DIR, "hprof_reader.py"), "--selftest"],
                       capture_output=True, text=True, timeout=300)
    last = (r.stdout.strip().splitlines() or [""])[-1]
    assert r.returncode == 0 and last.endswith(" 0 failures"), \
        "hprof_reader.py --selftest: rc %d, %s" % (r.returncode, (r.stdout + r.stderr)[-500:])
    nojdk_ctx.note(last)


def test_docs_check():
    """scripts/check-docs: README at most 400 lines with its Quick start in the
    first 80, every link and anchor of README.md and docs/*.md resolving
    inside the repository, no timestamps or commit hashes in prose."""
    r = subprocess.run([os.path.join(ROOT, "scripts", "check-docs")], capture_output=True, text=True,
                       timeout=60, cwd=ROOT)
    assert r.returncode == 0, "scripts/check-docs: " + "; ".join((r.stdout + r.stderr).strip().splitlines()[:10])
