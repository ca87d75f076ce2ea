"""A reader of build/hprof's own text outputs (`hprof report` and `hprof
diff`), shared by the tests that check them: its tables' rows.

    rows = table(report_text, "Top methods by self")   # [re.Match]
    rows[0].group(6)                                   # the method

A "Top methods" row: rank self% self total% total method (groups 1-6); a
diff row: change before% after% before after delta name (groups 1-7).
classes(report_text) reads the class table of a heap=sites file's report.
"""

import os
import re

HPROF = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "hprof")

RE_METHOD_ROW = re.compile(r"^\s+(\d+)\s+([\d.]+)%\s+([\d.]+)\s+([\d.]+)%\s+([\d.]+)\s+(\S+)$")
RE_DIFF_ROW = re.compile(r"^\s+([+-][\d.]+)\s+([\d.]+)%\s+([\d.]+)%\s+([\d,]+)\s+([\d,]+)\s+([+-]?[\d,]+)\s+(\S+)$")


class ReportError(Exception):
    pass


def table(report, title):
    """Rows (as matches of RE_METHOD_ROW or RE_DIFF_ROW) of the report's first
    table whose title starts with `title`; ReportError if it has none."""
    lines = report.split("\n")
    for i, line in enumerate(lines):
        if line.strip().startswith(title):
            rows = []
            for row in lines[i + 2:]:
                m = RE_METHOD_ROW.match(row) or RE_DIFF_ROW.match(row)
                if not m:
                    break
                rows.append(m)
            return rows
    raise ReportError("no table %r in the report" % title)


# A row of the report's class table: rank live-bytes live alloc-bytes alloc class.
RE_CLASS_ROW = re.compile(r"^\s+\d+\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+(\S+)$")


def classes(report):
    """The report's class table: {class: (live bytes, live, allocated bytes,
    allocated)}, the first row of each class."""
    out = {}
    for line in report.split("\n"):
        m = RE_CLASS_ROW.match(line)
        if m:
            out.setdefault(m.group(5), tuple(int(g.replace(",", "")) for g in m.groups()[:4]))
    return out
