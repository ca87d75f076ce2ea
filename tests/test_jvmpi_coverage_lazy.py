"""A class loaded on one thread and linked on another, under a coverage
agent that pairs CLASS_LOAD_HOOK and CLASS_LOAD on the thread, as JCov
does (issue 34, JCov).

    jvmpi_coverage_lazy  tests/java/JvmpiLazyCoverage.java under
                 build/libjvmpi.so with tests/jvmpi/coverage_agent.c: main
                 loads Later without linking it, thread "user" links and
                 runs it. Every class of interest paired (no "unpaired"
                 line: each CLASS_LOAD on the thread that saw its hook, as
                 on a JVMPI VM, which posted it at the load), so Later is
                 profiled: twice() entered exactly 2 times (line 14 run),
                 <clinit> once (line 11 run), User.run once. Before the layer linked such
                 classes at their load, Later's CLASS_LOAD came on "user"
                 and the agent, as JCov, did not profile it.
"""

import os
import re

import run

LAYER = os.path.join(run.BUILD, "libjvmpi.so")
AGENT = "libcoverage_agent.so"


def test_jvmpi_coverage_lazy(ctx, jvmpi_agents):
    out = ctx.path("coverage.txt")
    r = ctx.run("JvmpiLazyCoverage", agent="%s=out=%s,class=JvmpiLazyCoverage" % (os.path.join(jvmpi_agents, AGENT), out),
                agent_path=LAYER)
    assert "lazy 84 JvmpiLazyCoverage$Later" in r.stdout, "the program's answer: %r" % r.stdout[-300:]
    assert os.path.isfile(out), "coverage_agent wrote no %s; stderr: %s" % (out, r.stderr[-500:])
    text = open(out).read()
    assert "unpaired" not in text, "a CLASS_LOAD on a thread that did not see its CLASS_LOAD_HOOK:\n%s%s" % (
        text, r.stderr[-500:])
    entries = {m.group(1): (int(m.group(2)), m.group(3))
               for m in re.finditer(r"^method (\S+) entries (\d+) run (\S+) missed \S+$", text, re.M)}
    want = {"JvmpiLazyCoverage$Later.twice(I)I": 2, "JvmpiLazyCoverage$Later.<clinit>()V": 1,
            "JvmpiLazyCoverage$User.run()V": 1, "JvmpiLazyCoverage.main([Ljava/lang/String;)V": 1}
    got = {k: entries.get(k, (None, None))[0] for k in want}
    assert got == want, "calls per method, expected %s, got %s:\n%s" % (want, got, text)
    assert entries["JvmpiLazyCoverage$Later.twice(I)I"][1] == "14", "twice()'s one line (14) ran:\n%s" % text
    # its <clinit> runs inside the resolution of User.run's invokestatic, where HotSpot
    # posts no SingleStep (the layer's breakpoints stand in: tests/test_jvmpi_step.py)
    assert entries["JvmpiLazyCoverage$Later.<clinit>()V"][1] == "11", "<clinit>'s one line (11) ran:\n%s" % text
    assert re.search(r"^bad 0$", text, re.M), "instructions at offsets of no instruction:\n%s" % text
