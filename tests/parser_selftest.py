"""Self-test of hprof_text.py against a hand-written sample and broken variants.

Run directly (python3 tests/parser_selftest.py) or as the test `parser_selftest`
(tests/test_selftests.py).  Raises AssertionError on the first problem.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hprof_text as H  # noqa: E402

SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "sample.hprof.txt")
MONITOR_SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "monitor.hprof.txt")


def _read(path=SAMPLE):
    with open(path) as f:
        return f.read()


def check_good():
    p = H.parse(_read())
    assert p.header_date == "Sat Nov 21 08:00:00 2026", p.header_date
    assert set(p.threads) == {200001, 200002}, p.threads
    assert p.threads[200002].name == 'worker \\"1\\"', p.threads[200002].name
    assert p.threads[200001].group == "main"
    assert p.threads[200001].ended and p.threads[200002].ended
    assert len(p.traces) == 5
    t1 = p.traces[300001]
    assert t1.thread == 200002
    assert t1.frames[0] == H.Frame("CpuSplit", "partA", "CpuSplit.java", "40"), t1.frames[0]
    assert t1.frames[2].qualname == "java.lang.Thread.run"
    assert t1.has_method("partA") and t1.has_method("CpuSplit.run") and not t1.has_method("partB")
    t3 = p.traces[300003]
    assert t3.frames[0].is_native and t3.frames[1].line == "Unknown line"
    assert t3.frames[1].source == "<Unknown Source>"
    t4 = p.traces[300004]
    assert t4.frames == [H.Frame("[unwalkable]", "GC_active", "<Unknown Source>", "Unknown line")]
    t5 = p.traces[300005]
    assert t5.frames[0].cls == "Foo$$Lambda$14/0x0000000801001234" and t5.frames[1].method == "<init>"
    assert len(p.sections) == 2
    s0, s1 = p.sections
    assert (s0.total, len(s0.rows)) == (8, 2)
    assert s1.total == 1234 and s1.date == "Sat Nov  1 08:00:05 2026"
    assert p.final is s1
    assert s1.rows[0] == H.Row(1, 67.34, 67.34, 831, 300001, "CpuSplit.partA"), s1.rows[0]
    assert s1.rows[2].method == "[unwalkable].GC_active"
    assert p.samples() == 831 + 371 + 23 + 1
    assert p.samples(pred=lambda t: t.has_method("partB")) == 371
    assert p.samples(s0, lambda t: t.thread == 200002) == 8


def mutate(old, new, count=1, path=SAMPLE):
    text = _read(path)
    assert text.count(old) >= 1, "mutation anchor missing: %r" % old
    return text.replace(old, new, count)


def mmutate(old, new, count=1):
    return mutate(old, new, count, MONITOR_SAMPLE)


def check_good_monitor():
    p = H.parse(_read(MONITOR_SAMPLE))
    assert len(p.sections) == 2 and p.final.total == 4
    assert [k for k, _ in p.section_order] == ["cpu", "monitor_time", "monitor_wait", "monitor_dump", "deadlocks"] * 2
    assert len(p.monitor_times) == 2 and len(p.monitor_waits) == 2
    t0, t = p.monitor_times
    assert (t0.kind, t0.total_ms, len(t0.rows)) == ("time", 30, 3), t0
    assert t0.rows[2] == H.MonitorRow(3, 33.33, 100.00, 7, 300003, "java.lang.Object"), t0.rows[2]
    assert p.final_monitor_time is t and t.date == "Sat Nov 21 08:19:53 2026"
    assert t.rows[0] == H.MonitorRow(1, 50.84, 50.84, 102, 300004,
                                     "java.util.concurrent.locks.ReentrantLock$NonfairSync"), t.rows[0]
    assert abs(t.ms(t.rows[1]) - 0.4916 * 117) < 1e-9
    ms, n = t.time_of("java.lang.Object")
    assert n == 113 and abs(ms - 57.5172) < 1e-6, (ms, n)
    assert set(t.by_class()) == {"java.lang.Object", "java.util.concurrent.locks.ReentrantLock$NonfairSync"}
    w = p.final_monitor_wait
    assert w.kind == "wait" and w.total_ms == 406 and [r.monitor for r in w.rows] == ["java.lang.Thread", "int[]"]
    assert p.monitor_waits[0].rows == [] and p.monitor_waits[0].total_ms == 0
    d0, d = p.monitor_dumps
    assert list(d0.threads) == [200001, 200003, 200004] and d0.threads[200004].trace == 300000
    assert d.threads[200011] == H.DumpThread(200011, 300002, "MW")
    assert d.threads[200014].status == "P" and len(d.threads) == 8
    assert [m.java_name for m in d.monitors] == ["java.lang.Object", "int[]", "java.lang.ref.ReferenceQueue$Lock"]
    obj, arr, rq = d.monitors
    assert (obj.owner, obj.entry_count, obj.waiting_to_enter, obj.waiting_to_be_notified) == (200012, 1, [200011], [])
    assert (arr.signature, arr.owner, arr.entry_count, arr.waiting_to_enter) == ("[I", 200011, 2, [200011 + 1, 200015])
    assert rq.owner is None and rq.waiting_to_enter == [] and rq.waiting_to_be_notified == [200003]
    assert d.monitors_of("int[]") == [arr]
    assert H.signature_to_java("[[Ljava/lang/String;") == "java.lang.String[][]"
    assert [len(x.cycles) for x in p.deadlocks] == [0, 2] and p.deadlocks[0].n_cycles == 0
    dl = p.final_deadlocks
    c1, c2 = dl.cycles
    assert c1[0] == H.DeadlockMember(200011, "dl-mon-1", 300002, False, "java.lang.Object", 200012), c1[0]
    assert c1[1].lock == "int[]" and c1[1].held_by == 200011
    assert [m.parked for m in c2] == [True, True] and c2[1].lock.endswith("$FairSync")
    assert [m.name for m in dl.members] == ["dl-mon-1", "dl-mon-2", "dl-lock-1", "dl-lock-2"]
    assert p.thread_name(200015) == 'late \\"one\\"'


BROKEN = [
    ("bad header", lambda: mutate("JAVA PROFILE 1.0.1", "JAVA PROFILE 1.0.2")),
    ("no dashes", lambda: mutate("--------\n", "-------\n")),
    ("bad header date", lambda: mutate("created Sat Nov 21 08:00:00 2026", "created yesterday")),
    ("self% wrong", lambda: mutate("   1 67.34% 67.34%     831", "   1 67.40% 67.40%     831")),
    ("accum wrong", lambda: mutate("30.06% 97.41%", "30.06% 97.10%")),
    ("not descending", lambda: mutate("0.08% 99.35%       1 300005", "0.08% 99.35%      24 300005")),
    ("rank gap", lambda: mutate("   2 30.06%", "   3 30.06%")),
    ("missing trace", lambda: mutate("1 300005 Foo", "1 300009 Foo")),
    ("method != top frame", lambda: mutate("371 300002 CpuSplit.partB", "371 300002 CpuSplit.partC")),
    ("garbage in section", lambda: mutate("   2 37.50% 100.00%", "   2 37.50 100.00")),
    ("extra line in section", lambda: mutate("CPU SAMPLES END\nTRACE", "hello\nCPU SAMPLES END\nTRACE")),
    ("columns header", lambda: mutate("rank   self  accum   count trace method",
                                      "rank self accum count trace method")),
    ("no END", lambda: mutate("CPU SAMPLES END\nTHREAD END (id = 200001)\n", "THREAD END (id = 200001)\n")),
    ("total smaller than counts", lambda: mutate("(total = 8)", "(total = 7)")),
    ("bad frame line", lambda: mutate("\tCpuSplit.partB(CpuSplit.java:50)", "\tCpuSplit.partB CpuSplit.java:50")),
    ("bad line field", lambda: mutate("(CpuSplit.java:50)", "(CpuSplit.java:fifty)")),
    ("frame without method", lambda: mutate("\tCpuSplit.partB(", "\tpartB(")),
    ("trace without frames", lambda: mutate("TRACE 300002: (thread=200002)\n\tCpuSplit.partB(CpuSplit.java:50)\n"
                                            "\tCpuSplit.run(CpuSplit.java:21)\n", "TRACE 300002: (thread=200002)\n")),
    ("unknown thread in trace", lambda: mutate("TRACE 300004: (thread=200002)", "TRACE 300004: (thread=200009)")),
    ("END without START", lambda: mutate("THREAD END (id = 200002)", "THREAD END (id = 200007)")),
    ("double END", lambda: mutate("THREAD END (id = 200001)\n", "THREAD END (id = 200001)\nTHREAD END (id = 200001)\n")),
    ("duplicate START", lambda: mutate('name="main", group="main")\n',
                                       'name="main", group="main")\nTHREAD START (obj=5, id = 200001, '
                                       'name="x", group="main")\n')),
    ("trace redefined", lambda: mutate("TRACE 300005: (thread=200002)\n",
                                       "TRACE 300001:\n\tA.b(A.java:1)\nTRACE 300005: (thread=200002)\n")),
    ("unrecognised line", lambda: mutate("THREAD END (id = 200002)\n", "THREAD END (id = 200002)\nblah\n")),
    ("truncated", lambda: _read()[:-1]),
    ("truncated mid-section", lambda: _read()[:_read().rfind("   3  1.86%")]),
    ("duplicate trace row", lambda: mutate("   2 30.06% 97.41%     371 300002 CpuSplit.partB",
                                           "   2 30.06% 97.41%     371 300001 CpuSplit.partA")),
]


FIRST_MT = "   1 33.33% 33.33%       5 300002 java.lang.Object (Java)"
LAST_MT_ROW = "   2 49.16% 100.00%     113 300002 java.lang.Object (Java)"
DL_MON = ('\tTHREAD 200011 "dl-mon-1", trace 300002, waiting to lock java.lang.Object, held by THREAD 200012\n'
          '\tTHREAD 200012 "dl-mon-2", trace 300003, waiting to lock int[], held by THREAD 200011\n')
DUMP2_HEAD = "    THREAD 200001, trace 300006, status: CW\n"

def named_sample():
    """The sample with its second MONITOR DUMP as this version writes it:
    classes in Java form, each thread's name after its serial."""
    text = _read(MONITOR_SAMPLE)
    names = dict((m.group(1), m.group(2)) for m in re.finditer(r'id = (\d+), name="((?:[^"\\]|\\.)*)"', text))
    head, dump, tail = text.split("MONITOR DUMP BEGIN\n")[0:2] + ["".join(text.split("MONITOR DUMP BEGIN\n")[2:])]
    dump2, rest = tail.split("MONITOR DUMP END\n", 1)
    dump2 = re.sub(r"(THREAD|thread) (\d+)", lambda m: '%s %s "%s"' % (m.group(1), m.group(2), names[m.group(2)]), dump2)
    dump2 = re.sub(r"(?m)^    MONITOR (\S+)$", lambda m: "    MONITOR " + H.signature_to_java(m.group(1)), dump2)
    return "MONITOR DUMP BEGIN\n".join([head, dump, dump2]) + "MONITOR DUMP END\n" + rest


def check_named_dump():
    d = H.parse(named_sample()).final_monitor_dump
    assert d.named and d.names[200011] == "dl-mon-1" and d.names[200015] == 'late \\"one\\"', d.names
    assert [m.java_name for m in d.monitors] == ["java.lang.Object", "int[]", "java.lang.ref.ReferenceQueue$Lock"]
    assert all(m.named and m.signature is None for m in d.monitors)
    obj, arr, rq = d.monitors
    assert (obj.owner, obj.waiting_to_enter, arr.waiting_to_enter) == (200012, [200011], [200012, 200015])
    assert rq.waiting_to_be_notified == [200003]
    assert d.threads[200011] == H.DumpThread(200011, 300002, "MW")
    d0 = H.parse(named_sample()).monitor_dumps[0]
    assert d0.named is False and d0.names == {} and not d0.monitors[0].named


BROKEN_MONITOR = [
    # MONITOR TIME / MONITOR WAIT TIME
    ("mt: not ordered by time", lambda: mmutate("   1 50.84% 50.84%     102", "   1 48.84% 48.84%     102")),
    ("mt: accum not the running sum", lambda: mmutate("49.16% 100.00%     113", "49.16% 99.90%     113")),
    ("mt: accum over 100%", lambda: mmutate("   2  1.00% 100.00%", "   2  1.02% 100.02%")),
    ("mt: no (Java) trailer", lambda: mmutate(LAST_MT_ROW, LAST_MT_ROW[:-len(" (Java)")])),
    ("mt: rank gap", lambda: mmutate("   2 49.16%", "   3 49.16%")),
    ("mt: count 0", lambda: mmutate("     102 300004", "       0 300004")),
    ("mt: trace never written", lambda: mmutate("113 300002 java.lang.Object", "113 300009 java.lang.Object")),
    ("mt: row twice", lambda: mmutate("   3 33.33% 100.00%       7 300003", "   3 33.33% 100.00%       7 300002")),
    ("mt: column header", lambda: mmutate("rank   self  accum   count trace monitor",
                                          "rank   self  accum   count trace method")),
    ("mt: total without ms", lambda: mmutate("(total = 117 ms)", "(total = 117)")),
    ("mt: bad date", lambda: mmutate("(total = 117 ms) Sat Nov 21 08:19:53 2026", "(total = 117 ms) now")),
    ("mt: no END", lambda: mmutate("MONITOR TIME END\nMONITOR WAIT TIME BEGIN (total = 406",
                                   "MONITOR WAIT TIME BEGIN (total = 406")),
    ("mt: garbage row", lambda: mmutate(FIRST_MT, "   1 33.33% 33.33%       5 300002")),
    # order of a dump's sections
    ("order: WAIT TIME before TIME", lambda: mmutate(
        "MONITOR TIME BEGIN (total = 30 ms)", "MONITOR WAIT TIME BEGIN (total = 0 ms) Sat Nov 21 08:19:51 2026\n"
        "rank   self  accum   count trace monitor\nMONITOR WAIT TIME END\nMONITOR TIME BEGIN (total = 30 ms)")),
    ("order: no DEADLOCKS at the end", lambda: mmutate("DEADLOCKS BEGIN (cycles = 2)", "XX", 1).split("XX")[0]
     .rsplit("MONITOR DUMP END", 1)[0] + "MONITOR DUMP END\n"),
    ("order: CPU SAMPLES inside a group", lambda: mmutate(
        "MONITOR DUMP BEGIN\n    THREAD 200001, trace 300001", "CPU SAMPLES BEGIN (total = 3) Sat Nov 21 08:19:51 2026\n"
        "rank   self  accum   count trace method\nCPU SAMPLES END\nMONITOR DUMP BEGIN\n    THREAD 200001, trace 300001")),
    ("order: MONITOR DUMP missing", lambda: mmutate("MONITOR DUMP BEGIN\n" + DUMP2_HEAD, "XX").split("XX")[0]
     + _read(MONITOR_SAMPLE).split("MONITOR DUMP END\n")[2]),
    # MONITOR DUMP
    ("dump: unknown status", lambda: mmutate("trace 300002, status: MW", "trace 300002, status: BLOCKED")),
    ("dump: thread twice", lambda: mmutate(DUMP2_HEAD, DUMP2_HEAD + DUMP2_HEAD)),
    ("dump: THREAD after MONITOR", lambda: mmutate("\twaiting to be notified: thread 200003\nMONITOR DUMP END",
                                                   "\twaiting to be notified: thread 200003\n"
                                                   "    THREAD 200016, trace 300001, status: R\nMONITOR DUMP END")),
    ("dump: no owner line", lambda: mmutate("    MONITOR [I\n\towner: thread 200011, entry count: 2\n",
                                            "    MONITOR [I\n")),
    ("dump: entry count 0", lambda: mmutate("entry count: 2", "entry count: 0")),
    ("dump: bad thread list", lambda: mmutate("waiting to enter: thread 200012, thread 200015",
                                              "waiting to enter: 200012, 200015")),
    ("dump: lists swapped", lambda: mmutate("\twaiting to enter:\n\twaiting to be notified: thread 200003\nMONITOR DUMP END",
                                            "\twaiting to be notified: thread 200003\n\twaiting to enter:\n"
                                            "MONITOR DUMP END")),
    ("dump: monitor names a thread not dumped", lambda: mmutate("thread 200012, thread 200015",
                                                                "thread 200012, thread 200016")),
    ("dump: owner waits to enter its own monitor", lambda: mmutate("thread 200012, thread 200015",
                                                                   "thread 200012, thread 200011")),
    ("dump: thread listed twice in a list", lambda: mmutate("thread 200012, thread 200015",
                                                            "thread 200012, thread 200012")),
    ("dump: not a class name", lambda: mmutate("    MONITOR Ljava/lang/Object;", "    MONITOR java/lang/Object")),
    ("dump: name not THREAD START's", lambda: named_sample().replace('THREAD 200011 "dl-mon-1", trace 300002, status',
                                                                     'THREAD 200011 "dl-mon-9", trace 300002, status')),
    ("dump: named and unnamed threads", lambda: named_sample().replace('waiting to enter: thread 200011 "dl-mon-1"',
                                                                       'waiting to enter: thread 200011')),
    ("dump: a thread named two ways", lambda: named_sample().replace('waiting to enter: thread 200011 "dl-mon-1"',
                                                                     'waiting to enter: thread 200011 "dl-mon-2"')),
    ("dump: trace never written", lambda: mmutate("THREAD 200015, trace 300003", "THREAD 200015, trace 300019")),
    ("dump: thread without THREAD START", lambda: mmutate("    THREAD 200004, trace 300000, status: R\n    THREAD 200011",
                                                          "    THREAD 200099, trace 300000, status: R\n    THREAD 200011")),
    ("dump: no END", lambda: mmutate("MONITOR DUMP END\nDEADLOCKS BEGIN (cycles = 2)", "DEADLOCKS BEGIN (cycles = 2)")),
    ("dump: empty trace not written", lambda: mmutate("TRACE 300000:\n\t<empty>\n", "")),
    # DEADLOCKS
    ("dl: cycles count", lambda: mmutate("(cycles = 2)", "(cycles = 3)")),
    ("dl: numbering", lambda: mmutate("DEADLOCK 2 (2 threads)", "DEADLOCK 3 (2 threads)")),
    ("dl: member count", lambda: mmutate("DEADLOCK 1 (2 threads)", "DEADLOCK 1 (3 threads)")),
    ("dl: not a cycle", lambda: mmutate("parked on java.util.concurrent.locks.ReentrantLock$FairSync, held by THREAD 200013",
                                        "parked on java.util.concurrent.locks.ReentrantLock$FairSync, held by THREAD 200001")),
    ("dl: not from its smallest serial", lambda: mmutate(DL_MON, "".join(reversed(DL_MON.splitlines(True))))),
    ("dl: name differs from THREAD START", lambda: mmutate('"dl-mon-2", trace', '"dl-mon-X", trace')),
    ("dl: monitor wait but status P", lambda: mmutate("    THREAD 200012, trace 300003, status: MW",
                                                      "    THREAD 200012, trace 300003, status: P")),
    ("dl: parked but status MW", lambda: mmutate("    THREAD 200013, trace 300004, status: P",
                                                 "    THREAD 200013, trace 300004, status: MW")),
    ("dl: trace differs from the dump", lambda: mmutate('"dl-mon-2", trace 300003', '"dl-mon-2", trace 300004')),
    ("dl: thread in two cycles", lambda: mmutate("DEADLOCK 2 (2 threads):\n", "DEADLOCK 2 (2 threads):\n", 1)
     .replace("(cycles = 2)", "(cycles = 3)").replace("DEADLOCKS END\nTRACE 300006", "DEADLOCK 3 (2 threads):\n"
                                                       + DL_MON + "DEADLOCKS END\nTRACE 300006")),
    ("dl: malformed member", lambda: mmutate(", held by THREAD 200012\n", ", held by 200012\n")),
    ("dl: quote in name unescaped", lambda: mmutate('"dl-mon-1", trace', '"dl"mon-1", trace')),
    ("dl: no END", lambda: mmutate("DEADLOCKS END\nTRACE 300006", "TRACE 300006")),
    ("dl: rows without DEADLOCK header", lambda: mmutate("DEADLOCK 1 (2 threads):\n", "")),
]


def check_attached_without_dump():
    """An agent attached where the JVM tells monitor owners only to agents
    loaded at start-up leaves MONITOR DUMP and DEADLOCKS out, and says so in
    the header's limits: accepted then, refused without that line."""
    import re
    text = re.sub(r"MONITOR DUMP BEGIN\n.*?DEADLOCKS END\n", "", _read(MONITOR_SAMPLE), flags=re.S)
    assert "MONITOR DUMP" not in text and "DEADLOCKS" not in text
    limit = ("monitor=y: this JVM tells which monitors a thread owns or waits for only to an agent loaded at "
             "start-up: MONITOR DUMP and DEADLOCKS are left out after an attach (contention and waits are timed)\n")
    p = H.parse(text.replace("--------\n", limit + "--------\n", 1))
    assert [k for k, _ in p.section_order] == ["cpu", "monitor_time", "monitor_wait"] * 2, p.section_order
    try:
        H.parse(text)
    except H.ParseError:
        return
    raise AssertionError("parser accepted monitor sections without MONITOR DUMP and no limit saying why")


def check_broken():
    for name, make in BROKEN_MONITOR:
        text = make()
        assert text != _read(MONITOR_SAMPLE), "mutation did nothing: " + name
        try:
            H.parse(text)
        except H.ParseError:
            continue
        raise AssertionError("parser accepted broken monitor input: " + name)
    for name, make in BROKEN:
        text = make()
        try:
            H.parse(text)
        except H.ParseError:
            continue
        raise AssertionError("parser accepted broken input: " + name)


def check_collapsed():
    ok = H.parse_collapsed("java.lang.Thread.run;CpuSplit.run;CpuSplit.partA 831\n[unwalkable].GC_active 23\n")
    assert ok == [(["java.lang.Thread.run", "CpuSplit.run", "CpuSplit.partA"], 831),
                  (["[unwalkable].GC_active"], 23)], ok
    for bad in ["a;b\n", "a;b 0\n", "a;;b 3\n", " a;b 3\n", "a;b 3", "a;b 3 \n", "a;b x3\n"]:
        try:
            H.parse_collapsed(bad)
        except H.ParseError:
            continue
        raise AssertionError("collapsed parser accepted %r" % bad)


def main():
    check_good()
    check_good_monitor()
    check_attached_without_dump()
    check_named_dump()
    check_broken()
    check_collapsed()


if __name__ == "__main__":
    main()
    print("parser self-test OK")
