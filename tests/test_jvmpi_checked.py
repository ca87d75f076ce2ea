"""The JVMPI layer checked (pytest tests, run on each JDK with the ctx fixture
of tests/conftest.py): agents of tests/jvmpi/ (the jvmpi_agents fixture) on
tests/java/JvmpiCalls.java under -Xcheck:jni, and the layer built with
AddressSanitizer and UndefinedBehaviorSanitizer (the asan_layer fixture
below) running them with their exact results.

    jvmpi_checkjni       five of the agents (method_counter, free_logger,
                         hook_refs, class_thread_counter, heap_reader) under
                         -Xcheck:jni: no warning
                         (local references, exceptions left pending)
    jvmpi_asan           the layer built with ASan+UBSan running eight of the agents
                         (those of -Xcheck:jni but class_thread_counter, with
                         alloc_logger, functions_checker, coverage_agent.c
                         with alloc; hprof_like.c's heap
                         dumps while JvmpiCalls define defines classes) with
                         their exact results
"""

import os

import pytest

import run
from jvmpi_agents import ASAN_LAYER, agent, lines_of, run_agent, run_calls, run_coverage


@pytest.fixture(scope="module")
def asan_layer(request):
    """build/asan/libjvmpi.so made (unless --no-build) and what a JVM needs
    to run it: (its path, the environment); skips without gcc's libasan."""
    env = run.asan_env()
    if env is None:
        pytest.skip("gcc's libasan.so not found")
    if not request.config.getoption("no_build"):
        log = os.path.join(run.BUILD, "tests", "jvmpi-make-asan.log")
        if run.sh(["make", "-C", run.ROOT, "build/asan/libjvmpi.so"], log) != 0:
            pytest.fail("make build/asan/libjvmpi.so failed, see %s: %s" % (log, run.tail(run.read(log), 2)),
                        pytrace=False)
    if not os.path.isfile(ASAN_LAYER):
        pytest.fail("%s missing: run make build/asan/libjvmpi.so" % ASAN_LAYER, pytrace=False)
    return ASAN_LAYER, env


def test_jvmpi_checkjni(ctx, jvmpi_agents):
    problems = []
    for name, options, mode in (("method_counter", "class=JvmpiCalls", "calls"),
                                ("free_logger", "class=JvmpiCalls$Blob,gone=JvmpiCalls$Gone", "free"),
                                ("hook_refs", "", "hook"), ("class_thread_counter", "prefix=JvmpiCalls", "classes"),
                                ("heap_reader", "", "heap")):
        r, _lines = run_agent(ctx, name, mode, options, jvm=["-Xcheck:jni"])
        warnings = sorted(set(line for line in r.stderr.splitlines() if "WARNING" in line or "FATAL" in line))
        if warnings:
            problems.append("%s: expected no warning, found %s" % (name, warnings[:3]))
    assert not problems, "-Xcheck:jni: " + "; ".join(problems)


def sanitizer_reports(r):
    return [line for line in r.stderr.splitlines() if "AddressSanitizer" in line or "runtime error" in line]


def test_jvmpi_asan(ctx, jvmpi_agents, asan_layer):
    layer, env = asan_layer
    problems = []
    for name, options, mode, rc, want in (
            ("method_counter", "class=JvmpiCalls", "calls", 0, "method worker-3 leaf entries 800 exits 800"),
            ("alloc_logger", "class=JvmpiCalls$Blob", "alloc", 0, "arrays 261"),
            ("free_logger", "class=JvmpiCalls$Blob,gone=JvmpiCalls$Gone", "free", 0,
             "heap_dump0 SUCCESS live 500 kinds OK freed_present 0 total MANY"),
            ("functions_checker", "", "functions", 42, "monitor_dump java OK raw OK status OK"),
            ("hook_refs", "", "hook", 0, "globalref alloc SAME free SAME"),
            ("heap_reader", "", "heap", 0, "class_dump SUCCESS answer,big,head,counted,squares"),
            ("hprof_like", "dump,dumps=2,count=JvmpiCalls$Carrier,ask,supers", "define", 0, "ok")):
        out = ctx.path(name + ".txt")
        spec = agent(name) + "=out=" + out + ("," + options if options else "")
        r = run_calls(ctx, spec, mode, expect_rc=rc, env=env, layer=layer)
        bad = sanitizer_reports(r)
        if bad:
            problems.append("%s: expected no sanitizer report, found %s" % (name, bad[:3]))
        lines = lines_of(out)
        if want not in lines:
            problems.append("%s: expected %r, found %s" % (name, want, lines))
    try:
        bad = sanitizer_reports(run_coverage(ctx, ",alloc", layer=layer, env=env))
        if bad:
            problems.append("coverage_agent: expected no sanitizer report, found %s" % bad[:3])
    except (AssertionError, pytest.fail.Exception, run.Fail) as e:
        problems.append("coverage_agent: %s" % e)
    assert not problems, "; ".join(problems)
