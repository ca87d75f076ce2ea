"""The class-file rewriter end to end through build/hprof-bci, on each JDK
(tests/bci/: what each test checks is in bcitests.py's docstring and
tests/bci/README.md). Each check gathers every problem it finds over the
whole corpus into build/tests/out/<test>-<jdk>/problems.txt and fails with
the first of each kind."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bci"))
import bcitests  # noqa: E402


def test_bci_corpus(ctx):
    bcitests.bci_corpus(ctx)


def test_bci_structure(ctx):
    bcitests.bci_structure(ctx)


def test_bci_counts(ctx):
    bcitests.bci_counts(ctx)


def test_bci_huge(ctx):
    bcitests.bci_huge(ctx)


def test_bci_far_branches(ctx):
    bcitests.bci_far_branches(ctx)


def test_bci_limits(ctx):
    bcitests.bci_limits(ctx)


def test_bci_old_versions(ctx):
    bcitests.bci_old_versions(ctx)


def test_bci_edge_cases(ctx):
    bcitests.bci_edge_cases(ctx)


def test_bci_reinstrument(ctx):
    bcitests.bci_reinstrument(ctx)


def test_bci_cli(ctx):
    bcitests.bci_cli(ctx)


def test_bci_object_init(ctx):
    bcitests.bci_object_init(ctx)


def test_bci_checker_selftest(nojdk_ctx):
    """The structure checker notices each of 13 corruptions of a correctly
    rewritten class (and none in the class as rewritten)."""
    bcitests.bci_checker_selftest(nojdk_ctx)
