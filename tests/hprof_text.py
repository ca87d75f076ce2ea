"""Strict parser for HPROF text output (``format=a``): CPU samples and monitors.

Written from the format description in shared/docs/hprof-text-format.md and
the monitor=y section layout, not from the agent's code.  Usage::

    import hprof_text
    prof = hprof_text.parse_file("java.hprof.txt")
    final = prof.final            # last CPU SAMPLES section
    for row in final.rows: ...
    prof.traces[row.trace].frames  # [Frame(cls, method, source, line), ...]
    prof.final_monitor_time        # last MONITOR TIME section (contention)
    prof.final_monitor_wait        # last MONITOR WAIT TIME section
    prof.final_monitor_dump        # last MONITOR DUMP (threads, monitors)
    prof.final_deadlocks           # last DEADLOCKS section (cycles)
    total_ms, rows = hprof_text.parse_cpu_time_file(path)[-1]  # cpu=times
    hprof_text.calls_of(rows, "Class.method")
    hprof_text.parse_collapsed_file("stacks.txt")

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
* ``MONITOR TIME`` / ``MONITOR WAIT TIME`` / ``MONITOR PINNED TIME`` (optional,
  right after MONITOR WAIT TIME) sections: BEGIN line
  ``(total = <n> ms) <date>``, column header ``rank self accum count trace
  monitor``, rows ``rank self% accum% count trace <class> (Java)``; ranks in
  sequence, counts > 0, rows ordered by time (``self`` non-increasing; self is
  the row's share of the total time, so only its order and its running sum
  can be checked: ``accum`` within the rounding of the printed ``self``
  values), accum <= 100%, no (trace, class) listed twice, END line;
* ``MONITOR DUMP``: on JDKs with virtual threads first ``VIRTUAL THREADS: B
  blocked, L of them listed (blocked longest), O more as lock owners`` (L <= B),
  then ``THREAD <serial> "<name>", trace <serial>, status: <R|MW|CW|P|SL|S|Z>``
  lines (no thread twice), then ``MONITOR <class>`` blocks (the class in
  Java form, ``java.lang.Object``, ``int[]``) of
  ``owner: thread N "<name>", entry count: C`` (C >= 1, or ``unknown (a virtual
  thread)``: entry_count None) or ``unowned``, then
  ``waiting to enter:`` and ``waiting to be notified:`` lists of ``thread N
  "<name>"``, comma-separated; each name is the thread's THREAD START name
  (files of older versions, with JVM signatures and serials without names,
  are read too: ``DumpMonitor.named`` and ``MonitorDump.names`` tell); every
  thread a monitor names is one of the dump's THREAD lines; an owner does not
  wait to enter its own monitor;
* ``DEADLOCKS (cycles = N)``: N ``DEADLOCK k (m threads):`` blocks numbered
  1..N with m member lines ``THREAD s "name", trace t, waiting to lock|parked
  on <class>, held by THREAD h``; each member is held by the next one (the
  last by the first); a cycle starts at its smallest serial; no thread in two
  cycles; a member's name is its THREAD START name; its trace equals the one
  of the MONITOR DUMP just before, and its status there is MW (waiting to
  lock) or P (parked on) (S: suspended, accepted for both);
* the monitor sections of one dump come in the order MONITOR TIME, MONITOR
  WAIT TIME, MONITOR DUMP, DEADLOCKS (after the dump's CPU SAMPLES section,
  if any), and a file does not end in the middle of such a group; without
  MONITOR DUMP and DEADLOCKS where the header's limits say they are left
  out (an agent attached to a JVM that tells monitor owners only to agents
  loaded at start-up);
* after the whole file: every trace referenced by a section exists, the
  ``method`` column equals the top frame's ``Class.method`` and, with
  ``thread=y`` traces, the thread has a THREAD START record; every thread a
  MONITOR DUMP or DEADLOCKS section names has a THREAD START record.
"""

import re
import time
from collections import namedtuple

__all__ = [
    "ParseError", "Frame", "Trace", "Thread", "Row", "Section", "Profile",
    "MonitorRow", "MonitorTimeSection", "DumpThread", "DumpMonitor", "MonitorDump",
    "DeadlockMember", "DeadlocksSection",
    "parse", "parse_file", "parse_collapsed", "parse_collapsed_file",
    "TimeRow", "parse_cpu_time", "parse_cpu_time_file", "calls_of", "ms_of",
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


MonitorRow = namedtuple("MonitorRow", "rank self_pct accum_pct count trace monitor")
MonitorRow.__doc__ = "One MONITOR (WAIT) TIME row; monitor is the lock's Java class name."


class MonitorTimeSection:
    """A MONITOR TIME (kind 'time', contention), MONITOR WAIT TIME (kind
    'wait') or MONITOR PINNED TIME (kind 'pinned': virtual threads blocked
    while pinned to their carrier) section.  total_ms is the printed total
    (whole ms, truncated)."""

    TITLES = {"time": "MONITOR TIME", "wait": "MONITOR WAIT TIME", "pinned": "MONITOR PINNED TIME"}

    def __init__(self, kind, total_ms, date, lineno):
        self.kind = kind
        self.title = self.TITLES[kind]
        self.total_ms = total_ms
        self.date = date
        self.rows = []
        self.lineno = lineno

    def ms(self, row):
        """A row's time in ms, from its share of the total (+-0.005% of total, +-1 ms)."""
        return row.self_pct / 100.0 * self.total_ms

    def time_of(self, pred):
        """(ms, count) summed over rows whose monitor class satisfies pred (a
        class name or a function of the row)."""
        if isinstance(pred, str):
            name = pred
            pred = lambda r: r.monitor == name  # noqa: E731
        rows = [r for r in self.rows if pred(r)]
        return sum(self.ms(r) for r in rows), sum(r.count for r in rows)

    def by_class(self):
        """{class: (ms, count)} over all rows."""
        out = {}
        for r in self.rows:
            ms, n = out.get(r.monitor, (0.0, 0))
            out[r.monitor] = (ms + self.ms(r), n + r.count)
        return out

    def __repr__(self):
        return "MonitorTimeSection(%s, total=%d ms, %d rows, line %d)" % (
            self.kind, self.total_ms, len(self.rows), self.lineno)


DumpThread = namedtuple("DumpThread", "thread trace status")

# A thread in a MONITOR DUMP: its serial, then (this version) its name in quotes.
THREAD_REF = r'(?P<%s>\d+)(?: "(?P<%s>(?:[^"\\]|\\.)*)")?'


class DumpMonitor:
    def __init__(self, name, lineno):
        # Java form, e.g. java.lang.Object; older versions wrote the JVM
        # signature (Ljava/lang/Object;): then signature is it, and named False
        self.named = not RE_SIGNATURE.match(name)
        self.signature = None if self.named else name
        self.name = name if self.named else signature_to_java(name)
        self.owner = None                   # thread serial or None (unowned)
        self.entry_count = 0
        self.waiting_to_enter = []          # thread serials
        self.waiting_to_be_notified = []
        self.lineno = lineno

    @property
    def java_name(self):
        """java.lang.Object, int[] (whichever form the file has)."""
        return self.name

    def __repr__(self):
        return "DumpMonitor(%s, owner=%r, enter=%r, notify=%r)" % (
            self.name, self.owner, self.waiting_to_enter, self.waiting_to_be_notified)


class MonitorDump:
    def __init__(self, lineno):
        self.threads = {}                   # serial -> DumpThread, in file order
        self.names = {}                     # serial -> the name the dump gives it (every mention agrees)
        self.named = None                   # True: threads named (this version); False: serials only; None: no thread
        self.monitors = []                  # DumpMonitor, in file order
        self.lineno = lineno
        self.virtual = None                 # (blocked, listed, owners) from VIRTUAL THREADS, if any

    def monitors_of(self, java_name):
        return [m for m in self.monitors if m.java_name == java_name]

    def __repr__(self):
        return "MonitorDump(%d threads, %d monitors, line %d)" % (len(self.threads), len(self.monitors), self.lineno)


DeadlockMember = namedtuple("DeadlockMember", "thread name trace parked lock held_by")
DeadlockMember.__doc__ = "parked: True for 'parked on' (ownable synchronizer), False for 'waiting to lock' (monitor)."


class DeadlocksSection:
    def __init__(self, n_cycles, date, lineno):
        self.n_cycles = n_cycles
        self.date = date
        self.cycles = []                    # lists of DeadlockMember, in file order
        self.lineno = lineno

    @property
    def members(self):
        return [m for c in self.cycles for m in c]

    def __repr__(self):
        return "DeadlocksSection(%d cycles, line %d)" % (len(self.cycles), self.lineno)


class Profile:
    def __init__(self):
        self.header_date = None
        self.header_text = []       # free-text lines between first line and --------
        self.threads = {}           # serial -> Thread
        self.traces = {}            # serial -> Trace
        self.sections = []          # CPU SAMPLES sections, in file order
        self.monitor_times = []     # MONITOR TIME sections (contention), in file order
        self.monitor_waits = []     # MONITOR WAIT TIME sections, in file order
        self.monitor_pinned = []    # MONITOR PINNED TIME sections (JDK 21+), in file order
        self.monitor_dumps = []     # MONITOR DUMP sections, in file order
        self.deadlocks = []         # DEADLOCKS sections, in file order
        self.section_order = []     # (kind, first line no) of every section, in file order
        self.other_sections = []    # (kind, first line no) of other known section kinds
        self.agent_memory = []      # AGENT MEMORY lines, one per dump: dicts of ints

    @property
    def final(self):
        """The last CPU SAMPLES section (the final one), or None."""
        return self.sections[-1] if self.sections else None

    @property
    def final_monitor_time(self):
        return self.monitor_times[-1] if self.monitor_times else None

    @property
    def final_monitor_wait(self):
        return self.monitor_waits[-1] if self.monitor_waits else None

    @property
    def final_monitor_pinned(self):
        return self.monitor_pinned[-1] if self.monitor_pinned else None

    @property
    def final_monitor_dump(self):
        return self.monitor_dumps[-1] if self.monitor_dumps else None

    @property
    def final_deadlocks(self):
        return self.deadlocks[-1] if self.deadlocks else None

    def thread_name(self, serial):
        t = self.threads.get(serial)
        return t.name if t else None

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
# working when the agent grows cpu=times / heap= output.
OTHER_SECTIONS = [
    (re.compile(r"^CPU SUMMARY BEGIN \(total = \d+\) .+$"), "CPU SUMMARY END", "cpu_summary"),
    (re.compile(r"^WALL SUMMARY BEGIN \(total = \d+\) .+$"), "WALL SUMMARY END", "wall_summary"),
    (re.compile(r"^WALL SAMPLES BEGIN \(total = \d+\) .+$"), "WALL SAMPLES END", "wall_samples"),
    (re.compile(r"^CPU TIME \(ms\) BEGIN \(total = \d+\) .+$"), "CPU TIME (ms) END", "cpu_time"),
    (re.compile(r"^SITES BEGIN \(ordered by live bytes(, estimated from allocation samples every \d+ bytes)?\) .+$"),
     "SITES END", "sites"),
    (re.compile(r"^HEAP DUMP BEGIN \(\d+ objects, \d+ bytes\) .+$"), "HEAP DUMP END", "heap_dump"),
]
# monitor=y
RE_MON_TIME_BEGIN = re.compile(r"^(?P<title>MONITOR TIME|MONITOR WAIT TIME|MONITOR PINNED TIME) BEGIN \(total = (?P<total>\d+) ms\) "
                               r"(?P<date>.+)$")
MON_COLUMNS = "rank   self  accum   count trace monitor"
RE_MON_ROW = re.compile(
    r"^ *(?P<rank>\d+) +(?P<self>\d{1,3}\.\d\d)% +(?P<accum>\d{1,3}\.\d\d)% +"
    r"(?P<count>\d+) +(?P<trace>\d+) (?P<monitor>\S+) \(Java\)$")
MON_DUMP_BEGIN = "MONITOR DUMP BEGIN"
MON_DUMP_END = "MONITOR DUMP END"
DUMP_STATUSES = ("R", "MW", "CW", "P", "SL", "S", "Z")
RE_DUMP_THREAD = re.compile(r"^    THREAD " + THREAD_REF % ("thread", "name") + r", trace (?P<trace>\d+), status: (?P<status>\S+)$")
RE_DUMP_VIRTUAL = re.compile(r"^    VIRTUAL THREADS: (?P<blocked>\d+) blocked, (?P<listed>\d+) of them listed "
                             r"\(blocked longest\), (?P<owners>\d+) more as lock owners$")
RE_DUMP_MONITOR = re.compile(r"^    MONITOR (?P<sig>\S+)$")
RE_JAVA_CLASS = re.compile(r"^[^\s/;\[]+(\[\])*$")
RE_SIGNATURE = re.compile(r"^(\[*L[^;\s]+;|\[+[BCDFIJSZ])$")
RE_DUMP_OWNER = re.compile(r"^\towner: thread " + THREAD_REF % ("thread", "name") + r", entry count: "
                           r"(?P<count>-?\d+|unknown \(a virtual thread\))$")
DUMP_UNOWNED = "\tunowned"
RE_THREAD_LIST = re.compile(r"^\t(?P<label>waiting to enter|waiting to be notified):"
                            r"(?P<list>(?: thread %s)(?:, thread %s)*)?$"
                            % (THREAD_REF % ("t1", "n1"), THREAD_REF % ("t2", "n2")))
RE_DL_BEGIN = re.compile(r"^DEADLOCKS BEGIN \(cycles = (?P<n>\d+)\) (?P<date>.+)$")
DL_END = "DEADLOCKS END"
RE_DL_CYCLE = re.compile(r"^DEADLOCK (?P<k>\d+) \((?P<m>\d+) threads?\):$")
RE_DL_MEMBER = re.compile(
    r'^\tTHREAD (?P<thread>\d+) "(?P<name>(?:[^"\\]|\\.)*)", trace (?P<trace>\d+), '
    r"(?P<how>waiting to lock|parked on) (?P<lock>\S+), held by THREAD (?P<held>\d+)$")
# The monitor sections of one dump, in order.
MONITOR_GROUP = ["monitor_time", "monitor_wait", "monitor_dump", "deadlocks"]
MONITOR_TITLES = {"monitor_time": "MONITOR TIME", "monitor_wait": "MONITOR WAIT TIME",
                  "monitor_pinned": "MONITOR PINNED TIME",
                  "monitor_dump": "MONITOR DUMP", "deadlocks": "DEADLOCKS"}
PRIMITIVES = {"B": "byte", "C": "char", "D": "double", "F": "float", "I": "int", "J": "long", "S": "short",
              "Z": "boolean"}

# The agent's own memory at the start of each dump (our addition).
RE_AGENT_MEMORY = re.compile(r"^AGENT MEMORY \(bytes = (?P<bytes>\d+)\) (?P<date>.+): interning (?P<interning>\d+), "
                             r"payload (?P<payload>\d+), allocation sites (?P<sites>\d+); threads (?P<seen>\d+) seen, "
                             r"(?P<forgotten>\d+) ended ones forgotten$")
RE_MONITOR_EVENT = re.compile(r"^(WAIT|WAITED): MONITOR .+, (timeout|time_waited)=\d+, thread \d+$")

# self% is count/total printed with 2 decimals: allow half a unit of the last
# digit plus float slack.
PCT_TOL = 0.0051


def signature_to_java(sig):
    """JVM class signature -> Java name: Ljava/lang/Object; -> java.lang.Object, [[I -> int[][]."""
    dims = len(sig) - len(sig.lstrip("["))
    base = sig[dims:]
    if base.startswith("L") and base.endswith(";"):
        name = base[1:-1].replace("/", ".")
    else:
        name = PRIMITIVES.get(base, base)
    return name + "[]" * dims


RE_THREAD_ITEM = re.compile(r"thread " + THREAD_REF % ("thread", "name"))


def _thread_list(text):
    return [int(m.group("thread")) for m in RE_THREAD_ITEM.finditer(text or "")]


def _thread_list_names(text):
    """(serial, name or None) of each thread of a MONITOR DUMP list."""
    return [(int(m.group("thread")), m.group("name")) for m in RE_THREAD_ITEM.finditer(text or "")]


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

    # Where we are in a dump's group of monitor sections (index into
    # monitor_group). An agent attached to a JVM that tells monitor owners
    # only to agents loaded at start-up writes neither MONITOR DUMP nor
    # DEADLOCKS, and says so among the header's limits.
    monitor_group = MONITOR_GROUP
    if any("MONITOR DUMP and DEADLOCKS are left out" in line for line in prof.header_text):
        monitor_group = MONITOR_GROUP[:2]
    group = {"next": 0, "dump": None}

    def section_starts(idx, kind):
        if kind == "monitor_pinned":
            # Optional (JDKs with virtual threads): right after MONITOR WAIT TIME.
            if not prof.section_order or prof.section_order[-1][0] != "monitor_wait":
                err(idx, "MONITOR PINNED TIME section not right after MONITOR WAIT TIME")
        elif kind == "cpu":
            if group["next"] != 0:
                err(idx, "CPU SAMPLES section inside a dump's monitor sections (%s expected)"
                    % MONITOR_TITLES[monitor_group[group["next"]]])
        else:
            want = monitor_group[group["next"]]
            if kind != want:
                err(idx, "%s section where %s was expected (order: %s)"
                    % (MONITOR_TITLES[kind], MONITOR_TITLES[want], ", ".join(MONITOR_TITLES[k] for k in monitor_group)))
            group["next"] = (group["next"] + 1) % len(monitor_group)
        prof.section_order.append((kind, idx + 1))

    def parse_monitor_time(i, m):
        kind = {"MONITOR TIME": "time", "MONITOR WAIT TIME": "wait"}.get(m.group("title"), "pinned")
        title = m.group("title")
        sec = MonitorTimeSection(kind, int(m.group("total")), _check_date(m.group("date"), i + 1), i + 1)
        i += 1
        if i >= n or lines[i] != MON_COLUMNS:
            err(i, "expected column header %r" % MON_COLUMNS)
        i += 1
        printed_cum = 0.0
        seen = set()
        while True:
            if i >= n:
                err(i, "%s section starting at line %d has no END" % (title, sec.lineno))
            if lines[i] == title + " END":
                i += 1
                break
            rm = RE_MON_ROW.match(lines[i])
            if not rm:
                err(i, "malformed %s row" % title)
            row = MonitorRow(int(rm.group("rank")), float(rm.group("self")), float(rm.group("accum")),
                             int(rm.group("count")), int(rm.group("trace")), rm.group("monitor"))
            k = len(sec.rows) + 1
            if row.rank != k:
                err(i, "rank %d out of sequence (expected %d)" % (row.rank, k))
            if row.count <= 0:
                err(i, "row with count %d" % row.count)
            if sec.rows and row.self_pct > sec.rows[-1].self_pct:
                err(i, "rows not ordered by time descending")
            if (row.trace, row.monitor) in seen:
                err(i, "trace %d with monitor %s listed twice in one section" % (row.trace, row.monitor))
            seen.add((row.trace, row.monitor))
            printed_cum += row.self_pct
            # accum is the running sum of the exact shares, each self their
            # rounding: they differ by at most half a unit per row (+ accum's own).
            if abs(row.accum_pct - printed_cum) > 0.005 * (k + 1) + 1e-6:
                err(i, "accum %.2f%% is not the running sum of self (%.2f%%)" % (row.accum_pct, printed_cum))
            if row.accum_pct > 100.0 + PCT_TOL:
                err(i, "accum %.2f%% > 100%%" % row.accum_pct)
            sec.rows.append(row)
            i += 1
        {"time": prof.monitor_times, "wait": prof.monitor_waits, "pinned": prof.monitor_pinned}[kind].append(sec)
        return i

    def note_name(dump, th, name, i):
        """A dump names each thread alike at every mention, or (older
        versions) at none."""
        if (name is None) != (dump.named is False) and dump.named is not None:
            err(i, "thread %d %s, where other threads of this dump %s"
                % (th, "without a name" if name is None else "named", "have names" if dump.named else "have none"))
        dump.named = name is not None
        if name is None:
            return
        if dump.names.get(th, name) != name:
            err(i, "thread %d named %r here, %r before in this dump" % (th, name, dump.names[th]))
        dump.names[th] = name

    def parse_monitor_dump(i):
        dump = MonitorDump(i + 1)
        i += 1
        vm = RE_DUMP_VIRTUAL.match(lines[i]) if i < n else None
        if vm:
            dump.virtual = (int(vm.group("blocked")), int(vm.group("listed")), int(vm.group("owners")))
            if dump.virtual[1] > dump.virtual[0]:
                err(i, "more virtual threads listed than blocked")
            i += 1
        while True:
            if i >= n:
                err(i, "MONITOR DUMP section starting at line %d has no END" % dump.lineno)
            line = lines[i]
            if line == MON_DUMP_END:
                i += 1
                break
            tm = RE_DUMP_THREAD.match(line)
            if tm:
                if dump.monitors:
                    err(i, "THREAD line after the MONITOR lines")
                th = int(tm.group("thread"))
                if tm.group("status") not in DUMP_STATUSES:
                    err(i, "unknown thread status %r" % tm.group("status"))
                if th in dump.threads:
                    err(i, "thread %d listed twice in one MONITOR DUMP" % th)
                dump.threads[th] = DumpThread(th, int(tm.group("trace")), tm.group("status"))
                note_name(dump, th, tm.group("name"), i)
                i += 1
                continue
            mm = RE_DUMP_MONITOR.match(line)
            if not mm:
                err(i, "malformed MONITOR DUMP line")
            if not RE_SIGNATURE.match(mm.group("sig")) and not RE_JAVA_CLASS.match(mm.group("sig")):
                err(i, "not a class name (Java form) nor a class signature")
            mon = DumpMonitor(mm.group("sig"), i + 1)
            i += 1
            om = RE_DUMP_OWNER.match(lines[i]) if i < n else None
            if om:
                mon.owner = int(om.group("thread"))
                note_name(dump, mon.owner, om.group("name"), i)
                mon.entry_count = None if om.group("count").startswith("unknown") else int(om.group("count"))
                if mon.entry_count is not None and mon.entry_count < 1:
                    err(i, "owned monitor with entry count %d" % mon.entry_count)
            elif i >= n or lines[i] != DUMP_UNOWNED:
                err(i, "expected 'owner: thread N, entry count: C' or 'unowned' after MONITOR")
            i += 1
            for label, attr in (("waiting to enter", "waiting_to_enter"),
                                ("waiting to be notified", "waiting_to_be_notified")):
                lm = RE_THREAD_LIST.match(lines[i]) if i < n else None
                if not lm or lm.group("label") != label:
                    err(i, "expected '\\t%s: thread N, thread M...'" % label)
                lst = _thread_list(lm.group("list"))
                for th, name in _thread_list_names(lm.group("list")):
                    note_name(dump, th, name, i)
                if len(set(lst)) != len(lst):
                    err(i, "a thread listed twice")
                setattr(mon, attr, lst)
                i += 1
            for th in ([mon.owner] if mon.owner else []) + mon.waiting_to_enter + mon.waiting_to_be_notified:
                if th not in dump.threads:
                    err(mon.lineno - 1, "monitor names thread %d, which has no THREAD line in this dump" % th)
            if mon.owner in mon.waiting_to_enter:
                err(mon.lineno - 1, "owner %d also waits to enter its own monitor" % mon.owner)
            dump.monitors.append(mon)
        prof.monitor_dumps.append(dump)
        group["dump"] = dump
        return i

    def parse_deadlocks(i, m):
        sec = DeadlocksSection(int(m.group("n")), _check_date(m.group("date"), i + 1), i + 1)
        i += 1
        in_cycles = set()
        dump = group["dump"]
        while True:
            if i >= n:
                err(i, "DEADLOCKS section starting at line %d has no END" % sec.lineno)
            if lines[i] == DL_END:
                i += 1
                break
            cm = RE_DL_CYCLE.match(lines[i])
            if not cm:
                err(i, "expected 'DEADLOCK k (m threads):'")
            if int(cm.group("k")) != len(sec.cycles) + 1:
                err(i, "cycle number %s out of sequence" % cm.group("k"))
            size = int(cm.group("m"))
            if size < 1:
                err(i, "cycle of %d threads" % size)
            start = i
            i += 1
            cycle = []
            for _ in range(size):
                mm = RE_DL_MEMBER.match(lines[i]) if i < n else None
                if not mm:
                    err(i, "malformed DEADLOCK member line (cycle %d has %d members)" % (len(sec.cycles) + 1, size))
                mem = DeadlockMember(int(mm.group("thread")), mm.group("name"), int(mm.group("trace")),
                                     mm.group("how") == "parked on", mm.group("lock"), int(mm.group("held")))
                if mem.thread in in_cycles:
                    err(i, "thread %d in two deadlock cycles (or twice in one)" % mem.thread)
                in_cycles.add(mem.thread)
                if dump is not None:
                    dt = dump.threads.get(mem.thread)
                    if dt is None:
                        err(i, "deadlocked thread %d has no THREAD line in the MONITOR DUMP before" % mem.thread)
                    if dt.trace != mem.trace:
                        err(i, "trace %d != trace %d of thread %d in the MONITOR DUMP before"
                            % (mem.trace, dt.trace, mem.thread))
                    ok = ("P", "S") if mem.parked else ("MW", "S")
                    if dt.status not in ok:
                        err(i, "thread %d is '%s' but has status %s in the MONITOR DUMP before"
                            % (mem.thread, mm.group("how"), dt.status))
                cycle.append(mem)
                i += 1
            for k, mem in enumerate(cycle):
                nxt = cycle[(k + 1) % len(cycle)]
                if mem.held_by != nxt.thread:
                    err(start, "member %d is held by %d, but the next member is %d (not a cycle)"
                        % (mem.thread, mem.held_by, nxt.thread))
            if cycle[0].thread != min(mm_.thread for mm_ in cycle):
                err(start, "cycle does not start at its smallest thread serial")
            sec.cycles.append(cycle)
        if len(sec.cycles) != sec.n_cycles:
            err(sec.lineno - 1, "header says %d cycles, %d listed" % (sec.n_cycles, len(sec.cycles)))
        prof.deadlocks.append(sec)
        return i

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
            section_starts(i, "cpu")
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
        m = RE_MON_TIME_BEGIN.match(line)
        if m:
            section_starts(i, {"MONITOR TIME": "monitor_time", "MONITOR WAIT TIME": "monitor_wait"}.get(
                m.group("title"), "monitor_pinned"))
            i = parse_monitor_time(i, m)
            continue
        if line == MON_DUMP_BEGIN:
            section_starts(i, "monitor_dump")
            i = parse_monitor_dump(i)
            continue
        m = RE_DL_BEGIN.match(line)
        if m:
            section_starts(i, "deadlocks")
            i = parse_deadlocks(i, m)
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
            m = RE_AGENT_MEMORY.match(line)
            if m:
                _check_date(m.group("date"), i + 1)
                mem = {k: int(v) for k, v in m.groupdict().items() if k != "date"}
                if mem["bytes"] != mem["interning"] + mem["payload"] + mem["sites"]:
                    err(i, "AGENT MEMORY bytes are not the sum of their parts")
                prof.agent_memory.append(mem)
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
    if group["next"] != 0:
        raise ParseError("file ends after %s: the dump's %s section is missing"
                         % (MONITOR_TITLES[monitor_group[group["next"] - 1]],
                            MONITOR_TITLES[monitor_group[group["next"]]]))
    for sec in prof.monitor_times + prof.monitor_waits + prof.monitor_pinned:
        for row in sec.rows:
            if row.trace not in prof.traces:
                raise ParseError("%s section at line %d references trace %d, which is never written"
                                 % (sec.title, sec.lineno,
                                    row.trace))
    for dump in prof.monitor_dumps:
        for dt in dump.threads.values():
            if dt.trace not in prof.traces:
                raise ParseError("MONITOR DUMP at line %d: thread %d has trace %d, which is never written"
                                 % (dump.lineno, dt.thread, dt.trace))
    for sec in prof.deadlocks:
        for mem in sec.members:
            if mem.trace not in prof.traces:
                raise ParseError("DEADLOCKS at line %d: thread %d has trace %d, which is never written"
                                 % (sec.lineno, mem.thread, mem.trace))
    if check_thread_refs:
        for dump in prof.monitor_dumps:
            for th in dump.threads:
                if th not in prof.threads:
                    raise ParseError("MONITOR DUMP at line %d names thread %d, which has no THREAD START record"
                                     % (dump.lineno, th))
                if th in dump.names and dump.names[th] != prof.threads[th].name:
                    raise ParseError("MONITOR DUMP at line %d: thread %d is named %r, its THREAD START says %r"
                                     % (dump.lineno, th, dump.names[th], prof.threads[th].name))
        for sec in prof.deadlocks:
            for mem in sec.members:
                t = prof.threads.get(mem.thread)
                if t is None:
                    raise ParseError("DEADLOCKS at line %d names thread %d, which has no THREAD START record"
                                     % (sec.lineno, mem.thread))
                if t.name != mem.name:
                    raise ParseError("DEADLOCKS at line %d: thread %d is named %r, its THREAD START says %r"
                                     % (sec.lineno, mem.thread, mem.name, t.name))
        for tr in prof.traces.values():
            if tr.thread is not None and tr.thread not in prof.threads:
                raise ParseError("TRACE %d (line %d) names thread %d, which has no THREAD START record"
                                 % (tr.serial, tr.lineno, tr.thread))
    return prof


# ------------------------------------------------------- CPU TIME (cpu=times)

RE_TIME_BEGIN = re.compile(r"^CPU TIME \(ms\) BEGIN \(total = (\d+)\) .+$")
TIME_COLUMNS = "rank   self  accum   count trace method"
RE_TIME_ROW = re.compile(r"^ *(\d+) +(\d{1,3}\.\d\d)% +(\d{1,3}\.\d\d)% +(\d+) +(\d+) (\S+)$")
TIME_END = "CPU TIME (ms) END"


class TimeRow:
    """A CPU TIME row: `count` calls of `method` at `trace`, `ms` its self
    time (its share of the section's total)."""

    def __init__(self, rank, self_pct, accum_pct, count, trace, method, total_ms):
        self.rank, self.count, self.trace, self.method = rank, count, trace, method
        self.self_pct, self.accum_pct = self_pct, accum_pct
        self.ms = self_pct / 100.0 * total_ms


def parse_cpu_time(text):
    """[(total_ms, [TimeRow])] of every CPU TIME section, checked strictly:
    column header, consecutive ranks, self ordered, accum the running sum.
    Raises ParseError, also when there is no such section."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = RE_TIME_BEGIN.match(lines[i])
        if not m:
            i += 1
            continue
        total = int(m.group(1))
        if i + 1 >= len(lines) or lines[i + 1] != TIME_COLUMNS:
            raise ParseError("CPU TIME at line %d: bad column line %r" % (i + 2, lines[i + 1:i + 2]))
        rows, j, accum = [], i + 2, 0.0
        while j < len(lines) and lines[j] != TIME_END:
            r = RE_TIME_ROW.match(lines[j])
            if not r:
                raise ParseError("CPU TIME line %d: malformed row %r" % (j + 1, lines[j]))
            row = TimeRow(int(r.group(1)), float(r.group(2)), float(r.group(3)), int(r.group(4)),
                          int(r.group(5)), r.group(6), total)
            if row.rank != len(rows) + 1:
                raise ParseError("CPU TIME line %d: rank %d after %d" % (j + 1, row.rank, len(rows)))
            if rows and row.self_pct > rows[-1].self_pct:
                raise ParseError("CPU TIME line %d: rows not ordered by self time" % (j + 1))
            accum += row.self_pct
            if abs(accum - row.accum_pct) > 0.02 * len(rows) + 0.02:
                raise ParseError("CPU TIME line %d: accum %.2f%% is not the running sum %.2f%%"
                                 % (j + 1, row.accum_pct, accum))
            rows.append(row)
            j += 1
        if j == len(lines):
            raise ParseError("CPU TIME section at line %d without END" % (i + 1))
        out.append((total, rows))
        i = j + 1
    if not out:
        raise ParseError("no CPU TIME section")
    return out


def parse_cpu_time_file(path):
    with open(path, "r", encoding="utf-8") as f:
        text = f.read()
    try:
        return parse_cpu_time(text)
    except ParseError as e:
        raise ParseError("%s: %s" % (path, e)) from None


def calls_of(rows, method):
    """Calls of `method` in CPU TIME rows, over all its traces."""
    return sum(r.count for r in rows if r.method == method)


def ms_of(rows, method):
    """Self ms of `method` in CPU TIME rows, over all its traces."""
    return sum(r.ms for r in rows if r.method == method)


# ------------------------------------------------------- collapsed stacks

RE_COLLAPSED = re.compile(r"^\S.*(;\S.*)* \d+$")


RUN_MARKS = ("_[j]", "_[i]", "_[0]")


def parse_collapsed(text, runs=False):
    """Parse collapsed-stack text ('a;b;c 12' per line, root first).

    Returns a list of (frames_root_first, count).  Raises ParseError on a line
    not matching ^\\S.*(;\\S.*)* \\d+$, on a zero count or an empty frame.
    How a Java frame ran (the suffixes _[j] compiled, _[i] inlined, _[0]
    interpreted) is dropped from the names unless runs=True."""
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
        if not runs:
            frames = [f[:-4] if f.endswith(RUN_MARKS) and len(f) > 4 else f for f in frames]
        out.append((frames, int(count)))
    return out


def parse_collapsed_file(path, runs=False):
    with open(path, "r", encoding="utf-8") as f:
        return parse_collapsed(f.read(), runs)


if __name__ == "__main__":
    import sys
    for p in sys.argv[1:]:
        prof = parse_file(p)
        print("%s: %d threads, %d traces, %d CPU SAMPLES sections %s, %d MONITOR TIME sections %s, "
              "%d MONITOR WAIT TIME, %d MONITOR DUMP, DEADLOCKS cycles %s"
              % (p, len(prof.threads), len(prof.traces), len(prof.sections),
                 [s.total for s in prof.sections], len(prof.monitor_times),
                 [s.total_ms for s in prof.monitor_times], len(prof.monitor_waits), len(prof.monitor_dumps),
                 [len(d.cycles) for d in prof.deadlocks]))
