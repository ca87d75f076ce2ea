"""Why classes were loaded (pytest tests, run on each JDK with the ctx
fixture of tests/conftest.py): the stack that loaded each class, in
heap=dump's class records (text CLS, binary LOAD CLASS and CLASS DUMP) and in
`hprof report`'s classes by loader and loading site, on
tests/java/LazyLoads.java, which loads four classes from lines it prints.

    class_load_traces_binary  heap=dump,format=b (the JVM's dumper): A, B, C
                              and the lambda's LOAD CLASS trace starts at its
                              loading line, with the loader object's class
    class_load_traces_text    the same for the text dump's CLS records, every
                              trace they name written
    report_class_loads        hprof report of both files: each class under its
                              loader and loading site, the lambda under
                              LazyLoads
"""

import collections
import os
import re
import subprocess

import hprof_reader
from run import BUILD, parse_profile

HPROF = os.path.join(BUILD, "hprof")
RE_TRUTH = re.compile(r"^TRUTH (\w+) (\d+)$", re.M)
# The text dump's class records: CLS <id> (name=<class>, trace=<serial>).
RE_CLS = re.compile(r"^CLS [0-9a-f]+ \(name=(.+), trace=(\d+)\)$", re.M)
# What LazyLoads loads, by TRUTH name: the class (a prefix for the lambda's
# hidden class) and the method whose line loads it.
LOADED = {"A": ("LazyLoads$A", "first"), "B": ("LazyLoads$B", "second"),
          "C": ("LazyLoads$C", "third"), "lambda": ("LazyLoads$$Lambda", "fourth")}
APP_LOADER = "jdk.internal.loader.ClassLoaders$AppClassLoader"
# heap=dump,format=b alone has the JVM's own dumper write the heap dump: its
# LOAD CLASS serials from here (src/agent/heap_dump.c, JVM_CLASS_SERIALS).
JVM_CLASS_SERIALS = 0x40000000
# The serial of the empty trace (classes loaded before VMInit).
EMPTY_TRACE = "300000"


def from_jvm_dumper(d):
    """Fails unless every class of the dump d has a LOAD CLASS serial of the
    JVM's dumper's range: the file came from the JVM's dumper, each class
    once (no LOAD CLASS of the agent's duplicating one of the JVM's). Returns
    the class names that more than one LOAD CLASS names."""
    ours = sorted(c.name for c in d.classes.values() if (c.serial or 0) < JVM_CLASS_SERIALS)
    assert len(ours) < len(d.classes), "expected the JVM's dumper's LOAD CLASS serials (0x40000000 and up), " \
        "found none: the agent walked the heap itself"
    assert not ours, "expected every dumped class to have the JVM's LOAD CLASS serial; %d have the agent's: %s" % (
        len(ours), ours[:5])
    names = collections.Counter(c.name for c in d.load_class_by_serial.values())
    return sorted(n for n, k in names.items() if k > 1)


def truths(stderr):
    """LazyLoads' TRUTH lines: {what: the line that loads it}."""
    lines = {k: int(v) for k, v in RE_TRUTH.findall(stderr)}
    assert set(lines) == set(LOADED), "expected LazyLoads to print TRUTH lines for %s, found %s" % (
        sorted(LOADED), sorted(lines))
    return lines


def class_named(names, want):
    """The one name in names that is want (or, for the lambda, starts with it)."""
    found = [n for n in names if n == want or (want.endswith("$$Lambda") and n.startswith(want))]
    return found[0] if len(found) == 1 else None


def check_top(what, top, want_method, want_line, problems):
    if top != ("LazyLoads", want_method, want_line):
        problems.append("%s: the loading trace starts at %s, expected LazyLoads.%s line %d"
                        % (what, top, want_method, want_line))


def test_class_load_traces_binary(ctx):
    path = ctx.path("lazy.hprof")
    r = ctx.run("LazyLoads", [], agent="heap=dump,format=b,depth=4,file=" + path)
    lines = truths(r.stderr)
    d = hprof_reader.read(path)
    # The JVM's dumper: its LOAD CLASS records get the loading traces;
    # its CLASS DUMP records keep its empty trace (docs/heap.md).
    twice = from_jvm_dumper(d)
    problems = [p for p in d.check() if "trace" in p]
    by_name = {c.java_name: c for c in d.classes.values()}
    for what, (cls, method) in LOADED.items():
        name = class_named(by_name, cls)
        if name is None:
            problems.append("no single class named %s in the dump" % cls)
            continue
        c = by_name[name]
        t = d.traces.get(c.load_trace)
        if t is None or not t[1]:
            problems.append("%s: LOAD CLASS trace %s has no STACK TRACE with frames" % (name, c.load_trace))
            continue
        f = d.frames[t[1][0]]
        top = (d.load_class_by_serial[f.class_serial].java_name, f.method, f.line)
        check_top(name, top, method, lines[what], problems)
        loader = d.fetch([c.loader_id]).get(c.loader_id) if c.loader_id else None
        want = "LazyLoads$Custom" if what == "C" else APP_LOADER
        got = d.class_name(loader.class_id) if loader is not None else "bootstrap"
        if got != want:
            problems.append("%s: loader %s, expected %s" % (name, got, want))
    empty = sum(1 for c in d.classes.values() if not d.traces.get(c.load_trace, (0, []))[1])
    if empty == len(d.classes):
        problems.append("every class has the empty trace")
    assert not problems, "; ".join(problems)
    ctx.note("the JVM's dumper's file; A, B, C and the lambda each start at their loading line; %d of %d "
             "classes have an empty trace (loaded before VMInit); LOAD CLASS names twice: %s"
             % (empty, len(d.classes), twice[:5]))


def test_class_load_traces_text(ctx):
    path = ctx.path("lazy.txt")
    r = ctx.run("LazyLoads", [], agent="heap=dump,depth=4,file=" + path)
    lines = truths(r.stderr)
    prof = parse_profile(path)
    with open(path, encoding="utf-8") as f:
        cls = dict(RE_CLS.findall(f.read()))
    problems = []
    missing = sorted({t for t in cls.values() if int(t) not in prof.traces and t != EMPTY_TRACE})
    if missing:
        problems.append("CLS records name traces with no TRACE record: %s" % missing[:10])
    for what, (name, method) in LOADED.items():
        name = class_named(cls, name)
        if name is None:
            problems.append("no single CLS record named %s" % LOADED[what][0])
            continue
        t = prof.traces.get(int(cls[name]))
        top = t.top if t else None
        got = (top.cls, top.method, int(top.line)) if top and top.line.isdigit() else top
        check_top(name, got, method, lines[what], problems)
    assert not problems, "; ".join(problems)
    ctx.note("%d CLS records; A, B, C and the lambda each start at their loading line" % len(cls))


def report_tables(path):
    """hprof report's class tables: {title: [[cells], ...]} (cells split at 2+ spaces)."""
    r = subprocess.run([HPROF, "report", path, "--top", "1000"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, "hprof report %s: expected exit 0, got %d: %s" % (path, r.returncode, r.stderr[-400:])
    parts = r.stdout.split("Classes: why they were loaded", 1)
    assert len(parts) == 2, "hprof report %s: expected a section 'Classes: why they were loaded', found none" % path
    tables, title = {}, None
    for line in parts[1].splitlines()[1:]:
        if line.startswith("  ") and not line.startswith("    "):
            title = line.strip()
            tables[title] = []
        elif title and line.startswith("    "):
            tables[title].append(re.split(r"\s{2,}", line.strip()))
    for rows in tables.values():
        rows.pop(0)                     # the header
    return tables


def test_report_class_loads(ctx):
    problems, notes = [], []
    for fmt, name in (("b", "lazy.hprof"), ("a", "lazy.txt")):
        path = ctx.path(name)
        r = ctx.run("LazyLoads", [], agent="heap=dump,format=%s,depth=4,file=%s" % (fmt, path))
        lines = truths(r.stderr)
        if fmt == "b":
            from_jvm_dumper(hprof_reader.read(path))
        t = report_tables(path)
        sites = t.get("Classes by loader and loading site", [])
        # A and B: the application loader, each at its own line; C: the custom loader.
        for what, loader in (("A", "app"), ("B", "app"), ("C", "custom: LazyLoads$Custom")):
            cls, method = LOADED[what]
            site = "LazyLoads.%s(LazyLoads.java:%d)" % (method, lines[what])
            rows = [row for row in sites if len(row) == 4 and row[1] == loader and row[2] == site]
            if len(rows) != 1 or cls not in rows[0][3].split(", "):
                problems.append("format=%s: no row of loader %s at %s naming %s: %s"
                                % (fmt, loader, site, cls, rows or [r for r in sites if r[1] == loader]))
        site = "LazyLoads.fourth(LazyLoads.java:%d)" % lines["lambda"]
        if not any(row[1] == "app" and row[2] == site and "1 lambda of LazyLoads" in row[3] for row in sites):
            problems.append("format=%s: the lambda is not named by LazyLoads at %s" % (fmt, site))
        makers = t.get("Hidden classes by the class that made them", [])
        if ["1", "LazyLoads", "lambdas", "app"] not in makers:
            problems.append("format=%s: hidden classes by maker lack LazyLoads' lambda: %s" % (fmt, makers))
        loaders = {row[0]: row[1:] for row in t.get("Classes by loader", [])}
        if loaders.get("custom: LazyLoads$Custom", [None])[0] != "1":
            problems.append("format=%s: the custom loader's classes: %s, expected 1" % (fmt, loaders))
        notes.append("format=%s: %s" % (fmt, ", ".join("%s %s" % (k, v[0]) for k, v in loaders.items())))
    assert not problems, "; ".join(problems)
    ctx.note("; ".join(notes))
