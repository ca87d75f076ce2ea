"""Helpers shared by the tests of series of files (loop=, hprof listen's
periods): their files by period number, and CpuSplit's split in each.
Shared by tests/test_loop.py and tests/test_listen_series.py."""

import glob
import os
import re


def numbered_files(pattern, regex):
    """{period number: path} of the files a glob pattern finds whose base
    name matches regex (its group 1 the number)."""
    out = {}
    for p in glob.glob(pattern):
        m = re.search(regex, os.path.basename(p))
        if m:
            out[int(m.group(1))] = p
    return out


def cpu_split_samples(prof):
    """(total, partA, partB) of a parsed text profile's last CPU SAMPLES:
    the samples whose top frame is CpuSplit.partA / partB."""
    sec = prof.final
    top = lambda r: prof.traces[r.trace].top.qualname if prof.traces[r.trace].top else ""  # noqa: E731
    a = sum(r.count for r in sec.rows if top(r) == "CpuSplit.partA")
    b = sum(r.count for r in sec.rows if top(r) == "CpuSplit.partB")
    return sec.total, a, b
