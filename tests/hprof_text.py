"""Strict parser for HPROF text output (``format=a``), CPU-samples subset.

Written from the format description in shared/docs/hprof-text-format.md,
not from the agent's code.  Usage::

    import hprof_text
    prof = hprof_text.parse_file("java.hprof.txt")
    final = prof.final            # last CPU SAMPLES section
    for row in final.rows: ...
    prof.traces[row.trace].frames  # [Frame(cls, method, source, line), ...]

Every structural problem raises :class:`ParseError` (with a line number).
Checks done:

* header ``JAVA PROFILE 1.0.1, created <ctime date>``, free text, ``--------``;
* ``THREAD START`` / ``THREAD END`` records well-formed, no duplicate serials,
  no END without START, no double END;
* ``TRACE`` records well-formed, each followed by >= 1 frame line (or
  ``<empty>``); a trace written twice must be identical;
* ``CPU SAMPLES`` sections: BEGIN line with total and date, the exact column
  header, rows ``rank self% accum% count trace method``; ranks 1, 2, 3...;
  counts > 0 and non-increasing; ``self`` == count/total (within rounding of
  the printed 2 decimals); ``accum`` the running sum (of the exact ratios or
  of the printed ``self`` values); sum of counts <= total; no trace listed
  twice in one section; END line present;
* after the whole file: every trace referenced by a section exists, the
  ``method`` column equals the top frame's ``Class.method`` and, with
  ``thread=y`` traces, the thread has a THREAD START record.
"""

import re
import time
from collections import namedtuple

__all__ = [
    "ParseError", "Frame", "Trace", "Thread", "Row", "Section", "Profile",
    "parse", "parse_file", "parse_collapsed", "parse_collapsed_file",
]


class ParseError(Exception):
    pass


Frame = namedtuple("Frame", "cls method source line")
Frame.__doc__ = "One stack frame; line is the raw string: digits, 'Unknown line' or 'Native method'."
Frame.qualname = property(lambda f: f.cls + "." + f.method)
Frame.is_native = property(lambda f: f.line == "Native method")


class Thread:
    def __init__(self, serial, obj, name, group, lineno):
        self.serial = serial
        self.obj = obj
        self.name = name
        self.group = group
        self.ended = False
        self.start_lineno = lineno
        self.end_lineno = None

    def __repr__(self):
        return "Thread(%d, %r, group=%r, ended=%s)" % (self.serial, self.name, self.group, self.ended)


class Trace:
    def __init__(self, serial, thread, frames, lineno):
        self.serial = serial
        self.thread = thread        # thread serial or None
        self.frames = frames        # callee (top) first
        self.lineno = lineno

    @property
    def top(self):
        return self.frames[0] if self.frames else None

    def has_method(self, qualname_or_method):
        """True if any frame is `Class.method` (if a dot is given) or `method`."""
        if "." in qualname_or_method:
            return any(f.qualname == qualname_or_method for f in self.frames)
        return any(f.method == qualname_or_method for f in self.frames)

    def __repr__(self):
        return "Trace(%d, thread=%r, %r)" % (self.serial, self.thread, self.frames)


Row = namedtuple("Row", "rank self_pct accum_pct count trace method")


class Section:
    def __init__(self, total, date, lineno):
        self.total = total
        self.date = date
        self.rows = []
        self.lineno = lineno

    @property
    def counted(self):
        return sum(r.count for r in self.rows)

    def __repr__(self):
        return "Section(total=%d, %d rows, line %d)" % (self.total, len(self.rows), self.lineno)


class Profile:
    def __init__(self):
        self.header_date = None
        self.header_text = []       # free-text lines between first line and --------
        self.threads = {}           # serial -> Thread
        self.traces = {}            # serial -> Trace
        self.sections = []          # CPU SAMPLES sections, in file order
        self.other_sections = []    # (kind, first line no) of other known section kinds

    @property
    def final(self):
        """The last CPU SAMPLES section (the final one), or None."""
        return self.sections[-1] if self.sections else None

    def threads_named(self, name):
        return [t for t in self.threads.values() if t.name == name]

    def samples(self, section=None, pred=None):
        """Sum of counts of rows of `section` (default final) whose Trace satisfies pred."""
        section = section or self.final
        if section is None:
            return 0
        return sum(r.count for r in section.rows if pred is None or pred(self.traces[r.trace]))


# ---------------------------------------------------------------- regexes

RE_HEADER = re.compile(r"^JAVA PROFILE 1\.0\.1, created (?P<date>.+)$")
RE_THREAD_START = re.compile(
    r'^THREAD START \(obj=(?P<obj>[0-9a-fA-F]+), id = (?P<id>\d+), '
    r'name="(?P<name>.*)", group="(?P<group>.*)"\)$')
RE_THREAD_END = re.compile(r"^THREAD END \(id = (?P<id>\d+)\)$")
RE_TRACE = re.compile(r"^TRACE (?P<id>\d+):(?: \(thread=(?P<thread>\d+)\))?$")
RE_FRAME = re.compile(
    r"^\t(?P<cm>[^\s(][^(]*)\((?P<src>[^()]*):(?P<line>\d+|Unknown line|Native method)\)$")
RE_CPU_BEGIN = re.compile(r"^CPU SAMPLES BEGIN \(total = (?P<total>\d+)\) (?P<date>.+)$")
CPU_COLUMNS = "rank   self  accum   count trace method"
RE_CPU_ROW = re.compile(
    r"^ *(?P<rank>\d+) +(?P<self>\d{1,3}\.\d\d)% +(?P<accum>\d{1,3}\.\d\d)% +"
    r"(?P<count>\d+) +(?P<trace>\d+) (?P<method>\S+)$")
CPU_END = "CPU SAMPLES END"
# Other section kinds of the format; accepted (skipped) so the parser keeps
# working when the agent grows cpu=times / heap= / monitor= output.
OTHER_SECTIONS = [
    (re.compile(r"^CPU TIME \(ms\) BEGIN \(total = \d+\) .+$"), "CPU TIME (ms) END", "cpu_time"),
    (re.compile(r"^SITES BEGIN \(ordered by live bytes\) .+$"), "SITES END", "sites"),
    (re.compile(r"^MONITOR TIME BEGIN \(total = \d+ ms\) .+$"), "MONITOR TIME END", "monitor_time"),
    (re.compile(r"^MONITOR DUMP BEGIN$"), "MONITOR DUMP END", "monitor_dump"),
    (re.compile(r"^HEAP DUMP BEGIN \(\d+ objects, \d+ bytes\) .+$"), "HEAP DUMP END", "heap_dump"),
]
RE_MONITOR_EVENT = re.compile(r"^(WAIT|WAITED): MONITOR .+, (timeout|time_waited)=\d+, thread \d+$")

# self% is count/total printed with 2 decimals: allow half a unit of the last
# digit plus float slack.
PCT_TOL = 0.0051


def _check_date(s, lineno):
    try:
        time.strptime(s.strip(), "%a %b %d %H:%M:%S %Y")
    except ValueError:
        raise ParseError("line %d: bad date %r (want ctime format)" % (lineno, s))
    return s


def parse_file(path, **kw):
    with open(path, "r", encoding="utf-8", errors="strict", newline="") as f:
        return parse(f.read(), **kw)


def parse(text, check_thread_refs=True):
    """Parse the whole text of a java.hprof.txt file; returns a Profile."""
    if "\r" in text:
        raise ParseError("file contains carriage returns")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    else:
        raise ParseError("file does not end with a newline (truncated?)")
    prof = Profile()
    if not lines:
        raise ParseError("empty file")
    m = RE_HEADER.match(lines[0])
    if not m:
        raise ParseError("line 1: bad header %r" % lines[0])
    prof.header_date = _check_date(m.group("date"), 1)

    i = 1
    n = len(lines)
    while i < n and lines[i] != "--------":
        prof.header_text.append(lines[i])
        i += 1
    if i >= n:
        raise ParseError("no '--------' line ending the header text")
    i += 1

    def err(idx, msg):
        raise ParseError("line %d: %s: %r" % (idx + 1, msg, lines[idx] if idx < n else "<EOF>"))

    while i < n:
        line = lines[i]
        if line == "":
            i += 1
            continue
        m = RE_THREAD_START.match(line)
        if m:
            sid = int(m.group("id"))
            if sid in prof.threads:
                err(i, "duplicate THREAD START for id %d" % sid)
            prof.threads[sid] = Thread(sid, m.group("obj"), m.group("name"), m.group("group"), i + 1)
            i += 1
            continue
        m = RE_THREAD_END.match(line)
        if m:
            sid = int(m.group("id"))
            t = prof.threads.get(sid)
            if t is None:
                err(i, "THREAD END for thread %d without THREAD START before it" % sid)
            if t.ended:
                err(i, "second THREAD END for thread %d" % sid)
            t.ended = True
            t.end_lineno = i + 1
            i += 1
            continue
        m = RE_TRACE.match(line)
        if m:
            tid = int(m.group("id"))
            thr = int(m.group("thread")) if m.group("thread") is not None else None
            start = i
            i += 1
            frames = []
            if i < n and lines[i] in ("\t<empty>", "<empty>"):
                i += 1
            else:
                while i < n and lines[i].startswith("\t"):
                    fm = RE_FRAME.match(lines[i])
                    if not fm:
                        err(i, "malformed frame line in TRACE %d" % tid)
                    cm = fm.group("cm")
                    dot = cm.rfind(".")
                    if dot <= 0 or dot == len(cm) - 1:
                        err(i, "frame is not Class.method")
                    frames.append(Frame(cm[:dot], cm[dot + 1:], fm.group("src"), fm.group("line")))
                    i += 1
                if not frames:
                    err(start, "TRACE %d has no frame lines" % tid)
            if tid in prof.traces:
                old = prof.traces[tid]
                if old.frames != frames or old.thread != thr:
                    err(start, "TRACE %d written twice with different content" % tid)
            else:
                prof.traces[tid] = Trace(tid, thr, frames, start + 1)
            continue
        m = RE_CPU_BEGIN.match(line)
        if m:
            sec = Section(int(m.group("total")), _check_date(m.group("date"), i + 1), i + 1)
            i += 1
            if i >= n or lines[i] != CPU_COLUMNS:
                err(i, "expected column header %r" % CPU_COLUMNS)
            i += 1
            cum = 0
            printed_cum = 0.0
            seen = set()
            while True:
                if i >= n:
                    err(i, "CPU SAMPLES section starting at line %d has no END" % sec.lineno)
                if lines[i] == CPU_END:
                    i += 1
                    break
                rm = RE_CPU_ROW.match(lines[i])
                if not rm:
                    err(i, "malformed CPU SAMPLES row")
                row = Row(int(rm.group("rank")), float(rm.group("self")), float(rm.group("accum")),
                          int(rm.group("count")), int(rm.group("trace")), rm.group("method"))
                if row.rank != len(sec.rows) + 1:
                    err(i, "rank %d out of sequence (expected %d)" % (row.rank, len(sec.rows) + 1))
                if row.count <= 0:
                    err(i, "row with count %d" % row.count)
                if sec.rows and row.count > sec.rows[-1].count:
                    err(i, "rows not ordered by count descending")
                if row.trace in seen:
                    err(i, "trace %d listed twice in one section" % row.trace)
                seen.add(row.trace)
                if sec.total <= 0:
                    err(i, "row in a section with total = %d" % sec.total)
                cum += row.count
                if cum > sec.total:
                    err(i, "counts add up to %d > total %d" % (cum, sec.total))
                exact = 100.0 * row.count / sec.total
                if abs(row.self_pct - exact) > PCT_TOL:
                    err(i, "self %.2f%% != count/total = %.4f%%" % (row.self_pct, exact))
                printed_cum += row.self_pct
                exact_cum = 100.0 * cum / sec.total
                if abs(row.accum_pct - exact_cum) > PCT_TOL and abs(row.accum_pct - printed_cum) > PCT_TOL:
                    err(i, "accum %.2f%% is not the running sum (%.4f%%)" % (row.accum_pct, exact_cum))
                sec.rows.append(row)
                i += 1
            prof.sections.append(sec)
            continue
        for rx, end, kind in OTHER_SECTIONS:
            if rx.match(line):
                start = i
                while i < n and lines[i] != end:
                    i += 1
                if i >= n:
                    err(start, "%s section has no %r line" % (kind, end))
                prof.other_sections.append((kind, start + 1))
                i += 1
                break
        else:
            if RE_MONITOR_EVENT.match(line):
                i += 1
                continue
            err(i, "unrecognised line")

    # cross-references
    for sec in prof.sections:
        for row in sec.rows:
            tr = prof.traces.get(row.trace)
            if tr is None:
                raise ParseError("CPU SAMPLES section at line %d references trace %d, which is never written"
                                 % (sec.lineno, row.trace))
            if tr.frames and row.method != tr.frames[0].qualname:
                raise ParseError("CPU SAMPLES section at line %d, rank %d: method %r != top frame %r of trace %d"
                                 % (sec.lineno, row.rank, row.method, tr.frames[0].qualname, tr.serial))
    if check_thread_refs:
        for tr in prof.traces.values():
            if tr.thread is not None and tr.thread not in prof.threads:
                raise ParseError("TRACE %d (line %d) names thread %d, which has no THREAD START record"
                                 % (tr.serial, tr.lineno, tr.thread))
    return prof


# ------------------------------------------------------- collapsed stacks

RE_COLLAPSED = re.compile(r"^\S.*(;\S.*)* \d+$")


def parse_collapsed(text):
    """Parse collapsed-stack text ('a;b;c 12' per line, root first).

    Returns a list of (frames_root_first, count).  Raises ParseError on a line
    not matching ^\\S.*(;\\S.*)* \\d+$, on a zero count or an empty frame."""
    out = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    elif text:
        raise ParseError("collapsed file does not end with a newline")
    for k, line in enumerate(lines, 1):
        if not RE_COLLAPSED.match(line):
            raise ParseError("collapsed line %d malformed: %r" % (k, line))
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if any(f == "" for f in frames):
            raise ParseError("collapsed line %d has an empty frame: %r" % (k, line))
        if int(count) <= 0:
            raise ParseError("collapsed line %d has count %s" % (k, count))
        out.append((frames, int(count)))
    return out


def parse_collapsed_file(path):
    with open(path, "r", encoding="utf-8") as f:
        return parse_collapsed(f.read())


if __name__ == "__main__":
    import sys
    for p in sys.argv[1:]:
        prof = parse_file(p)
        print("%s: %d threads, %d traces, %d CPU SAMPLES sections %s"
              % (p, len(prof.threads), len(prof.traces), len(prof.sections),
                 [s.total for s in prof.sections]))
