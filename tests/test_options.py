"""The agent's options on Busy.java (a thread spinning in Busy.spin, five
frames deep): what each option changes in the report, and every refusal.

    basic               default options: java.hprof.txt, depth 4, lines, sources
    stdout_clean        the program's stdout unchanged by the agent and by monitor=y
    collapsed           collapsed= totals equal CPU SAMPLES', stacks root first
    lineno_n, depth_2, cutoff, doe_n, force_n, agentlib, help
                        each option's effect
    file_unwritable     file= that cannot be created: a start-up error
    bad_option[OPT]     each malformed option: a start-up error naming it
"""

import os
import re

import pytest

from run import BUILD, diag, final_section, parse_collapsed, parse_profile, read, tail


def expect_startup_error(ctx, opts, words):
    """The JVM stops at start-up with an hprof: message that names `words`."""
    r = ctx.run("Busy", ["200"], agent=opts, expect_rc="nonzero")
    ctx.note("rc %d, %s" % (r.rc, diag(r, 4)))
    assert "hprof:" in r.stderr, "stderr lacks 'hprof:'"
    missing = [w for w in words if w.lower() not in r.stderr.lower()]
    assert not missing, "stderr does not mention %s" % missing
    assert "Busy: done" not in r.stdout, "the program ran (JVM did not stop at start-up)"


BAD_OPTIONS = [
    # (option string, words stderr must contain: the option's name and, where
    # the accepted values can be told apart from the name, a word of them)
    ("foo=bar", ["foo", "interval", "depth"]),   # unknown: the valid option names
    ("interval=abc", ["interval"]),
    ("interval=0", ["interval"]),
    ("depth=-1", ["depth", "256"]),
    ("depth=257", ["depth", "256"]),
    ("cpu=bogus", ["cpu", "samples"]),
    ("thread=maybe", ["thread"]),
    ("cutoff=2", ["cutoff"]),
    ("sampler=fast", ["sampler", "perf", "timer"]),
    ("file=", ["file"]),
    ("monitor=maybe", ["monitor"]),
    ("deadlock=100", ["deadlock", "monitor=y"]),      # deadlock= needs monitor=y
]


@pytest.mark.parametrize("option,words", [pytest.param(o, w, id=o) for o, w in BAD_OPTIONS])
def test_bad_option(ctx, option, words):
    expect_startup_error(ctx, option if option.startswith("cpu=") else "cpu=samples," + option, words)


def test_file_unwritable(ctx):
    expect_startup_error(ctx, "cpu=samples,file=/proc/hprof-no/x.txt", ["file"])


HELP_OPTIONS = ["cpu", "interval", "depth", "thread", "lineno", "cutoff", "file", "force", "doe",
                "verbose", "collapsed", "help", "heap", "monitor", "format", "net"]


def test_help(ctx):
    r = ctx.run("Busy", ["100"], agent="help", expect_rc=0)
    missing = [o for o in HELP_OPTIONS if not re.search(r"(?<![\w-])%s(?![\w-])" % o, r.stdout)]
    assert not missing, "help output on stdout lacks option names: %s" % ", ".join(missing)


def test_force_n(ctx):
    path = ctx.path("keep.txt")
    old = "OLD CONTENT, must survive force=n\n"
    with open(path, "w") as f:
        f.write(old)
    r = ctx.run("Busy", ["500"], agent="cpu=samples,force=n,file=" + path)
    assert read(path) == old, "force=n overwrote the existing file"
    m = re.search(r"^PID (\d+)$", r.stderr, re.M)
    pids = {str(r.pid)} | ({m.group(1)} if m else set())
    new = [f for f in os.listdir(ctx.out)
           if f != "keep.txt" and any(pid in f for pid in pids) and not f.startswith("run")
           and not f.startswith("hs_err")]
    ctx.note("force=n: pid %s, new files: %s" % ("/".join(sorted(pids)), new))
    assert new, "no new file with the pid (%s) in its name in %s: %s" \
        % ("/".join(sorted(pids)), ctx.out, sorted(os.listdir(ctx.out)))
    for f in new:
        final_section(parse_profile(ctx.path(f)), f)


def test_agentlib(ctx):
    r = ctx.run("Busy", ["500"], agentlib="cpu=samples", env={"LD_LIBRARY_PATH": BUILD})
    sec = final_section(parse_profile(ctx.path("java.hprof.txt")))
    assert sec.total > 0, "no samples"
    assert "Busy: done" in r.stdout, "program did not run to the end"


def busy_traces(prof):
    return [t for t in prof.traces.values() if any(f.cls == "Busy" for f in t.frames)]


def test_basic(ctx):
    """Default options (only cpu=samples): java.hprof.txt in the working
    directory, depth 4, line numbers, source file names."""
    ctx.run("Busy", ["800"], agent="cpu=samples")
    prof = parse_profile(ctx.path("java.hprof.txt"))
    sec = final_section(prof)
    spin = prof.samples(sec, lambda t: t.top is not None and t.top.qualname == "Busy.spin")
    ctx.note("basic: total %d, top-frame Busy.spin %d, %d traces" % (sec.total, spin, len(prof.traces)))
    assert spin > 0, "no sample with top frame Busy.spin"
    lens = [len(t.frames) for t in prof.traces.values()]
    assert max(lens) <= 4, "a trace has %d frames (default depth is 4)" % max(lens)
    assert 4 in lens, "no trace reaches the default depth 4"
    frames = [f for t in busy_traces(prof) for f in t.frames if f.cls == "Busy"]
    assert any(f.source == "Busy.java" and f.line.isdigit() for f in frames), \
        "no Busy frame with source Busy.java and a line number"
    assert prof.threads_named("main"), "no THREAD START for main"


def test_collapsed(ctx):
    prof_path = ctx.path("busy.hprof.txt")
    col = ctx.path("busy.collapsed")
    ctx.run("Busy", ["800"], agent="cpu=samples,depth=16,file=%s,collapsed=%s" % (prof_path, col))
    sec = final_section(parse_profile(prof_path))
    stacks = parse_collapsed(col)
    total = sum(c for _, c in stacks)
    ctx.note("collapsed: %d lines, counts sum %d, samples total %d" % (len(stacks), total, sec.total))
    assert total == sec.total, "collapsed counts sum to %d, samples total is %d" % (total, sec.total)
    # Java frames are pkg.Class.method (no signature); native functions
    # (native=y) are C or C++ names, which have no dot.
    bad = [f for fr, _ in stacks for f in fr if "." in f and "(" in f]
    assert not bad, "frames not in pkg.Class.method form: %s" % bad[:3]
    rootfirst = [fr for fr, _ in stacks if "Busy.main" in fr and "Busy.spin" in fr]
    assert rootfirst, "no stack with both Busy.main and Busy.spin"
    assert all(fr.index("Busy.main") < fr.index("Busy.spin") for fr in rootfirst), \
        "stacks not root first (Busy.spin before Busy.main)"


def test_lineno_n(ctx):
    prof_path = ctx.path("busy.hprof.txt")
    ctx.run("Busy", ["800"], agent="cpu=samples,lineno=n,file=" + prof_path)
    prof = parse_profile(prof_path)
    final_section(prof)
    frames = [f for t in prof.traces.values() for f in t.frames]
    bad = [f for f in frames if f.line not in ("Unknown line", "Native method")]
    native = [f for f in frames if f.line == "Native method"]
    ctx.note("lineno=n: %d frames, %d native" % (len(frames), len(native)))
    assert busy_traces(prof), "no trace with Busy frames"
    assert not bad, "frames with a line number despite lineno=n: %s" % bad[:3]


def test_depth_2(ctx):
    prof_path = ctx.path("busy.hprof.txt")
    ctx.run("Busy", ["800"], agent="cpu=samples,depth=2,file=" + prof_path)
    prof = parse_profile(prof_path)
    final_section(prof)
    lens = [len(t.frames) for t in prof.traces.values()]
    assert max(lens) <= 2, "trace with %d frames despite depth=2" % max(lens)
    assert 2 in lens, "no trace with 2 frames (Busy's stack is 5 deep)"


def test_stdout_clean(ctx):
    plain = ctx.run("Busy", ["300"], tag="noagent")
    prof_path = ctx.path("busy.hprof.txt")
    with_agent = ctx.run("Busy", ["300"], agent="cpu=samples,file=" + prof_path, tag="agent")
    assert plain.stdout == "Busy: done\n", "program's own stdout unexpected: %r" % plain.stdout[:200]
    assert with_agent.stdout == plain.stdout, "stdout differs with the agent: %r" % with_agent.stdout[:300]
    final_section(parse_profile(prof_path))
    # monitor=y re-binds Unsafe.park: HotSpot would warn about that on stdout
    # unless it is done from boot-loader code (see monitor_agent.c).
    mon_path = ctx.path("busy-monitor.hprof.txt")
    with_monitor = ctx.run("Busy", ["300"], agent="cpu=samples,monitor=y,file=" + mon_path, tag="monitor")
    assert with_monitor.stdout == plain.stdout, "stdout differs with monitor=y: %r" % with_monitor.stdout[:300]
    assert "parks timed in a wrapper of Unsafe.park" in with_monitor.stderr, \
        "monitor=y did not wrap Unsafe.park (fell back to breakpoints?); stderr: %s" % tail(with_monitor.stderr)
    said = re.search(r"monitor=y: (.*)", with_monitor.stderr)
    ctx.note("monitor=y: stdout unchanged, %s" % (said.group(1) if said else "?"))


def test_cutoff(ctx):
    prof_path = ctx.path("busy.hprof.txt")
    ctx.run("Busy", ["800"], agent="cpu=samples,cutoff=0.2,file=" + prof_path)
    sec = final_section(parse_profile(prof_path))
    assert sec.rows, "no rows at all with cutoff=0.2 (Busy.spin alone has well over 20%)"
    low = [r for r in sec.rows if r.count < 0.2 * sec.total]
    ctx.note("cutoff=0.2: %d rows, %d of %d samples listed" % (len(sec.rows), sec.counted, sec.total))
    assert not low, "rows under the 20%% cutoff: %s" % [(r.rank, r.self_pct) for r in low]


def test_doe_n(ctx):
    prof_path = ctx.path("busy.hprof.txt")
    ctx.run("Busy", ["300"], agent="cpu=samples,doe=n,file=" + prof_path)
    if os.path.exists(prof_path):
        prof = parse_profile(prof_path)
        assert not prof.sections, "doe=n but the file has %d CPU SAMPLES section(s)" % len(prof.sections)
