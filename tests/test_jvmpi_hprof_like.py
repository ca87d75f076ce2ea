"""An agent that uses JVMPI as HPROF did (pytest tests, run on each JDK with
the ctx fixture of tests/conftest.py): tests/jvmpi/hprof_like.c, written to
the JVMPI specification alone, in build/libjvmpi.so on
tests/java/JvmpiCalls.java (modes hprof and define): RequestEvent from inside
its handlers, level 2 heap dumps at JVM_SHUT_DOWN (also while a thread
defines classes), objects asked for by id, every class and thread announced
before an event names it, allocation traces. Its checks are its own lines
(`requests N refused N depth N`, `fetched ...`, `instances CLASS N N`), `ok`
last when it found nothing wrong.

    jvmpi_hprof_requests hprof_like.c, an agent that uses JVMPI as HPROF did, on
                         JvmpiCalls hprof: RequestEvent(OBJECT_ALLOC) of each
                         class object from CLASS_LOAD and of each object's class
                         from OBJECT_ALLOC (java/lang/Class's class object asks
                         for itself): hundreds answered, nested at most 4
                         deep, exactly one refused (an object already being
                         described on the thread is not delivered again)
    jvmpi_hprof_dump     hprof_like.c reading a level 2 HEAP_DUMP at JVM_SHUT_DOWN
                         (thousands of records), asked for after disabling every
                         event as HPROF does: every class it names (CLASS_DUMP
                         and its super, INSTANCE_DUMP's class, OBJ_ARRAY_DUMP's
                         element class, such as JvmpiCalls$Unlinked of the
                         Unlinked[3], never linked, and JvmpiCalls$Base[], made
                         by the JVM with Made[]; STICKY_CLASS roots: none for
                         the classes loaded but never linked) had its
                         CLASS_LOAD first; every object of the dump it did not
                         know (thousands, made before its first OBJECT_ALLOC)
                         asked for by id as HPROF does, and answered as that
                         object: its id, the class (an array's element class)
                         and the kind the dump gives it
    jvmpi_dump_new_classes hprof_like.c on JvmpiCalls define: 3 level 2
                         HEAP_DUMPs while thread "definer" defines classes
                         (each a loader's own JvmpiCalls$Carrier): every kept
                         Carrier in each, with all its fields (its class
                         loaded after the layer read the class list
                         included), and no line of the layer's on stderr
    jvmpi_dump_described hprof_like.c: a level 2 HEAP_DUMP describes every object it
                         names as a root or a static value;
                         the nine primitive types' Class objects, named by
                         JVMTI's walk without a record, are INSTANCE_DUMPs of
                         java/lang/Class (every field's value), and so, the
                         agent having turned CLASS_LOAD off, are the Class
                         objects of classes never linked
    jvmpi_hprof_arrays   hprof_like.c: every OBJECT_ALLOC of an array of references
                         names an element class that had its CLASS_LOAD before
                         (JvmpiCalls$Unlinked of new Unlinked[3], never linked
                         by the program, included)
    jvmpi_hprof_classes  hprof_like.c: every OBJECT_ALLOC's class had its CLASS_LOAD
                         before (java/lang/Class for the class objects asked for
                         in the sweep at VMInit, java/lang/Thread for main's),
                         every event's thread its THREAD_START (the one posting
                         JVM_SHUT_DOWN too; hprof_like forgets a thread at
                         THREAD_END, as HPROF does)
    jvmpi_hprof_traces   hprof_like.c: JvmpiCalls$Made's allocation traces start
                         at the allocating method (made(), 100, and
                         MadeHolder.<init>, 1; not Object.<init> or Made's own
                         constructors), every trace's method resolves
    jvmpi_hprof_quiet    hprof_like.c's heap dump after thread "short" ended: no
                         message of the layer's on stderr (a thread that ended,
                         a call after the VM's death fail quietly)
"""

import re

import pytest

from jvmpi_agents import agent, check_done, lines_of, run_calls, source_line


def hprof_like(ctx, checks, expect_rc=0):
    """hprof_like.c on JvmpiCalls hprof with the given checks: (result, out lines)."""
    out = ctx.path("hprof_like.txt")
    spec = agent("hprof_like") + "=out=%s%s" % (out, "".join("," + c for c in checks))
    r = run_calls(ctx, spec, "hprof", expect_rc=None)
    if r.rc != expect_rc or "hprof_like:" in r.stderr:
        pytest.fail("hprof_like (%s): expected rc %d and no complaint of its own, found rc %s: %s"
                    % (",".join(checks), expect_rc, r.rc, r.stderr[-1500:]))
    check_done(r, "hprof")
    lines = lines_of(out)
    assert lines and lines[-1] == "ok", "expected hprof_like to end with ok, found: %s" % lines[-3:]
    return r, lines


def first_match(pattern, lines, what):
    """The groups of the first line that matches pattern, as ints."""
    for line in lines:
        m = re.match(pattern, line)
        if m:
            return [int(x) for x in m.groups()]
    pytest.fail("expected a %s line, found none in: %s" % (what, lines[-3:]))


def test_jvmpi_hprof_requests(ctx, jvmpi_agents):
    """RequestEvent(OBJECT_ALLOC) from CLASS_LOAD and OBJECT_ALLOC handlers (the class object,
    java/lang/Class's, and its own): answered, never delivered again from its own handler."""
    _r, lines = hprof_like(ctx, [])
    requests, refused, depth = first_match(r"^requests (\d+) refused (\d+) depth (\d+)", lines, "requests")
    # Every class object is asked for once (CLASS_LOAD), java/lang/Class's inside it; one request
    # (java/lang/Class's own class object, asked for while it is being described) is refused.
    assert requests >= 300 and refused == 1 and 2 <= depth <= 4, \
        "expected hundreds of requests, exactly one refused (java/lang/Class's class object, asked for inside " \
        "its own OBJECT_ALLOC), depth 2 to 4; found requests %d refused %d depth %d" % (requests, refused, depth)


def test_jvmpi_hprof_dump(ctx, jvmpi_agents):
    """A level 2 HEAP_DUMP at JVM_SHUT_DOWN after the agent disabled every event, as HPROF does:
    every class it names had its CLASS_LOAD first (JvmpiCalls$Base[], which the JVM made with
    Made[] and no object of it, included: announced as CLASS_LOAD was switched off); every
    object in it the agent did not know (made before its OBJECT_ALLOCs), asked for by id as HPROF
    does, answered as that object (its class and kind as the dump gives them)."""
    _r, lines = hprof_like(ctx, ["dump", "off", "fetch"])
    records = [re.search(r"dump_records (\d+)", line) for line in lines]
    records = [x for x in records if x]
    assert records and int(records[0].group(1)) >= 1000, \
        "expected a heap dump of thousands of records, found %s" % (records[0].group(1) if records else "none")
    fetched, refused, wrong = first_match(r"^fetched (\d+) refused (\d+) wrong (\d+)$", lines, "fetched")
    # The JVM's own objects from before the agent's first OBJECT_ALLOC: thousands, all alive.
    assert fetched >= 1000 and wrong == 0 and refused * 100 <= fetched, \
        "expected thousands fetched, none wrong, (almost) none refused; found fetched %d refused %d wrong %d" % (
            fetched, refused, wrong)


def test_jvmpi_dump_described(ctx, jvmpi_agents):
    """A level 2 HEAP_DUMP names no object it does not describe: every root's object and static
    value has its record in the dump. The Class objects
    of the nine primitive types (int.class ...: UNKNOWN roots, values of fields such as
    Wrapper.primitiveType), which JVMTI's walk names without describing, are INSTANCE_DUMPs of
    java/lang/Class, each with every instance field's value; so, the agent having turned CLASS_LOAD
    off, are the Class objects of classes never linked."""
    _r, lines = hprof_like(ctx, ["dump", "off", "described", "count=java/lang/Class"])
    named, undescribed = first_match(r"^named (\d+) undescribed (\d+)$", lines, "named")
    assert named >= 1000 and undescribed == 0, \
        "expected the dump to name thousands of objects, none undescribed; found %d named, %d undescribed" % (
            named, undescribed)
    # The nine primitive types', and, the agent having turned CLASS_LOAD off, the Class objects of
    # the classes loaded but never linked (class data sharing maps hundreds into the heap).
    counts = [re.match(r"^instances java/lang/Class (\d+) (\d+)$", line) for line in lines]
    counts = [m for m in counts if m]
    assert counts and int(counts[0].group(1)) >= 9 and counts[0].group(1) == counts[0].group(2), \
        "expected INSTANCE_DUMPs of at least the 9 primitive types' Class objects, all whole, found %s" % [
            line for line in lines if line.startswith("instances")]


def test_jvmpi_hprof_arrays(ctx, jvmpi_agents):
    """Every OBJECT_ALLOC's class (an array's element class: JvmpiCalls$Unlinked of new Unlinked[3],
    never linked) had its CLASS_LOAD before it."""
    hprof_like(ctx, ["arrays"])


def test_jvmpi_hprof_classes(ctx, jvmpi_agents):
    """Every OBJECT_ALLOC's class had its CLASS_LOAD before it (the class objects the agent asks
    for during the sweep of the classes loaded before VMInit: java/lang/Class's; main's Thread
    object at its THREAD_START: java/lang/Thread's), and every event's thread had its THREAD_START
    (the thread that posts JVM_SHUT_DOWN, "DestroyJavaVM" on JDK 17 and later, included)."""
    hprof_like(ctx, ["classes", "threads"])


def test_jvmpi_hprof_traces(ctx, jvmpi_agents):
    """An allocation's trace starts at the allocating method, as a JVMPI VM posted OBJECT_ALLOC at
    `new`: JvmpiCalls$Made's (constructors Made.<init>, Base.<init>, Object.<init> under it) at
    made() 100 times and at MadeHolder.<init> (another class's constructor, which allocates) once;
    and every method of every trace had its CLASS_LOAD."""
    _r, lines = hprof_like(ctx, ["traces", "top=JvmpiCalls$Made"])
    got = sorted(line.split()[2:] for line in lines if line.startswith("top "))
    want = sorted([["JvmpiCalls.made", str(source_line("MADE_LINE")), "100"],
                   ["JvmpiCalls$MadeHolder.<init>", str(source_line("HOLDER_LINE")), "1"]])
    assert got == want, "first frames of JvmpiCalls$Made's allocation traces: expected %s, found %s" % (want, got)


def test_jvmpi_dump_new_classes(ctx, jvmpi_agents):
    """Heap dumps while a thread defines classes (JvmpiCalls define: JvmpiCalls$Carrier again and
    again, each by a loader of its own, the last 200 kept): 3 level 2 dumps at JVM_SHUT_DOWN, each
    with every kept Carrier described with all its fields (a class loaded after the layer read
    the class list included), and no line of the layer's on stderr. A class whose CLASS_LOAD is on
    its way (its thread waits for the agent's lock) is asked for, as JVMPI agents did. Races this
    caught (about 1 run in 30 each): an instance of a Carrier that was loaded but not linked when
    the class list was read had no field values; a class the dump named that was unloaded,
    its CLASS_UNLOAD delivered before the dump. Run with JVMPI_DIAGNOSTICS=1: nothing left out."""
    out = ctx.path("hprof_like.txt")
    spec = agent("hprof_like") + "=out=%s,dump,dumps=3,count=JvmpiCalls$Carrier,ask" % out
    # With the layer's diagnostics: a failure says what the layer left out or refused.
    r = run_calls(ctx, spec, "define", expect_rc=None, env={"JVMPI_DIAGNOSTICS": "1"})
    said = [line for line in r.stderr.splitlines() if line.startswith(("jvmpi:", "hprof_like:"))]
    assert r.rc == 0 and not said, "expected rc 0 and nothing of the layer's or the agent's on stderr, " \
        "found rc %s: %s" % (r.rc, said[:5] or r.stderr[-1500:])
    lines = lines_of(out)
    counts = [line.split()[2:] for line in lines if line.startswith("instances ")]
    assert len(counts) == 3 and lines[-1] == "ok", "expected 3 dumps and ok, found: %s" % lines[-5:]
    for n, whole in ((int(a), int(b)) for a, b in counts):
        # The 200 kept, and the one being made if the definer was between two stores.
        assert n >= 200 and whole == n, "dumps' JvmpiCalls$Carrier instances (count, with every field): " \
            "expected at least 200, all whole; found %s" % counts


def test_jvmpi_hprof_quiet(ctx, jvmpi_agents):
    """A heap dump after a thread ended (its trace is asked for): nothing of the layer's on stderr."""
    r, _lines = hprof_like(ctx, ["dump"])
    said = [line for line in r.stderr.splitlines() if "JVMTI" in line or line.startswith(("hprof:", "jvmpi:"))]
    assert not said, "expected nothing of the layer's in the agent's stderr, found: %s" % said[:5]
