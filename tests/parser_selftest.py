"""Self-test of hprof_text.py against a hand-written sample and broken variants.

Run directly (python3 tests/parser_selftest.py) or through run.py
(test name `parser_selftest`).  Raises AssertionError on the first problem.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hprof_text as H  # noqa: E402

SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "sample.hprof.txt")


def _read():
    with open(SAMPLE) as f:
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


def mutate(old, new, count=1):
    text = _read()
    assert text.count(old) >= 1, "mutation anchor missing: %r" % old
    return text.replace(old, new, count)


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


def check_broken():
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
    check_broken()
    check_collapsed()


if __name__ == "__main__":
    main()
    print("parser self-test OK")
