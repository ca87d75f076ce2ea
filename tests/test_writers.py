"""The writers over the profile model (src/profile), checked with the tools
people read their output with: `go tool pprof` reads our pprof file,
flamegraph.pl draws our collapsed stacks, headless Chromium runs our flame
graph page.  The profile is build/tests/profile_writers' known profile (its
numbers are below); the tools are installed by scripts/ensure-test-tools
when missing, and a test SKIPs (with the reason) when one still is not there.
Tests without a JDK (pytest tests; the nojdk_ctx fixture of tests/conftest.py).

    writers_pprof_go                 go tool pprof reads our pprof
    writers_collapsed_flamegraph_pl  flamegraph.pl draws our collapsed stacks
    writers_html_chromium            headless Chromium runs our flame graph page
"""

import html
import json
import os
import re
import shutil
import subprocess

import pytest

from run import BUILD, ROOT, read, sh, tail

FLAMEGRAPH_PL = "/usr/share/perl5/Devel/NYTProf/flamegraph.pl"   # Debian libdevel-nytprof-perl

# The known profile (tests/writers/profile_writers.c): 100 samples of 10 ms.
TOTAL = 100
FLAT = {"java.util.HashMap.get": 50, "java.lang.String.hashCode": 25, "java.util.HashMap.<init>": 15,
        "java.lang.System.arraycopy": 7, "[unwalkable].GC_active": 3}
CUM = {"Demo.main": 97, "Demo.run": 97, "Demo.lambda$run$0": 75, "java.util.HashMap.get": 75}
LINES = {"java.util.HashMap.get HashMap.java:556": 40, "java.util.HashMap.get HashMap.java:557": 10,
         "java.lang.String.hashCode String.java:2300": 25, "Demo.main Demo.java:20": 0}
THREADS = {"main": 72, "worker-1": 25}
OUT = os.path.join(BUILD, "tests", "out", "writers")


@pytest.fixture(scope="module")
def known_files():
    """The driver built and the known profile written, once: the directory
    of known.pb.gz, known.collapsed and known.html."""
    os.makedirs(OUT, exist_ok=True)
    log = os.path.join(OUT, "make.log")
    if sh(["make", "-C", ROOT, "build/tests/profile_writers"], log) != 0:
        pytest.fail("make build/tests/profile_writers failed, see %s: %s" % (log, tail(read(log), 3)), pytrace=False)
    r = subprocess.run([os.path.join(BUILD, "tests", "profile_writers"), "known", OUT],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        pytest.fail("profile_writers known: expected exit 0, got %d: %s" % (r.returncode, r.stderr[-300:]),
                    pytrace=False)
    return OUT


@pytest.fixture(scope="module")
def ensure_tools_log():
    """scripts/ensure-test-tools run once (it installs what is missing); its log."""
    log = os.path.join(OUT, "ensure-test-tools.log")
    os.makedirs(OUT, exist_ok=True)
    sh([os.path.join(ROOT, "scripts", "ensure-test-tools")], log, timeout=900)
    return log


def need_tools(log, *tools):
    missing = [t for t in tools if not (os.path.isfile(t) if t.startswith("/") else shutil.which(t))]
    if missing:
        pytest.skip("%s not installed and scripts/ensure-test-tools could not install it (see %s)"
                    % (", ".join(missing), log))


def run_tool(cmd, timeout=120):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=OUT,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, "%s: expected exit 0, got %d: %s" % (" ".join(cmd[:4]), r.returncode, r.stderr[-400:])
    return r.stdout


def pprof_top(path, *options):
    """go tool pprof -top as {name: (flat, cum)} and its header."""
    text = run_tool(["go", "tool", "pprof", "-top", "-nodecount=1000"] + list(options) + [path])
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\s*(\S+)\s+\S+%\s+\S+%\s+(\S+)\s+\S+%\s+(.+?)\s*$", line)
        if m and m.group(1) != "flat":
            rows[m.group(3)] = (m.group(1), m.group(2))
    return rows, text


def check_counts(rows, want, column, what):
    bad = ["%s: %s %s, want %s" % (name, what, rows.get(name, ("-", "-"))[column], n)
           for name, n in want.items() if rows.get(name, ("-", "-"))[column] != str(n)]
    assert not bad, "go tool pprof disagrees with the profile: " + "; ".join(bad)


def test_writers_pprof_go(nojdk_ctx, known_files, ensure_tools_log):
    """go tool pprof reads our pprof: totals, per-function flat and
    cumulative counts, file:line, cpu time and thread labels as written."""
    path = os.path.join(known_files, "known.pb.gz")
    need_tools(ensure_tools_log, "go")
    rows, text = pprof_top(path, "-sample_index=samples")
    assert "of %d total" % TOTAL in text, "go tool pprof -top: expected 'of %d total', found: %s" % (TOTAL, text[:300])
    check_counts(rows, FLAT, 0, "flat")
    check_counts(rows, CUM, 1, "cum")
    rows, text = pprof_top(path, "-lines")
    check_counts(rows, LINES, 0, "flat")
    rows, text = pprof_top(path, "-sample_index=cpu")
    assert "Total samples = 1000ms" in text and rows.get("java.util.HashMap.get", ("",))[0] == "500ms", \
        "go tool pprof -sample_index=cpu: expected 1000ms total, HashMap.get 500ms; found: " + text[:400]
    tags = run_tool(["go", "tool", "pprof", "-tags", path])
    for thread, n in THREADS.items():
        assert re.search(r"\b%d(\.0)? \([\d.]+%%\): %s$" % (n, re.escape(thread)), tags, re.M), \
            "go tool pprof -tags: expected thread %s with %d samples, found: %s" % (thread, n, tags)
    nojdk_ctx.note("go tool pprof: %d samples, %d functions as written" % (TOTAL, len(FLAT) + len(CUM)))


def test_writers_collapsed_flamegraph_pl(nojdk_ctx, known_files, ensure_tools_log):
    """flamegraph.pl draws our collapsed stacks: an SVG with every method
    and the per-frame totals of the profile."""
    path = os.path.join(known_files, "known.collapsed")
    need_tools(ensure_tools_log, FLAMEGRAPH_PL, "perl")
    svg = run_tool(["perl", FLAMEGRAPH_PL, path])
    with open(nojdk_ctx.path("known.svg"), "w") as f:
        f.write(svg)
    titles = dict((m.group(1), int(m.group(2)))
                  for m in re.finditer(r"<title>(.+?) \((\d+) samples?, [\d.]+%\)</title>", svg))
    want = {"all": TOTAL, "Demo.main": 97, "Demo.lambda$run$0": 75, "java.util.HashMap.get": 75,
            "java.lang.String.hashCode": 25, "[unwalkable].GC_active": 3}
    # This flamegraph.pl writes <init> as (init); others escape it.
    init = titles.get("java.util.HashMap.(init)", titles.get("java.util.HashMap.&lt;init&gt;"))
    bad = ["%s: %s, want %d" % (k, titles.get(k), v) for k, v in want.items() if titles.get(k) != v]
    if init != 15:
        bad.append("java.util.HashMap.<init>: %s, want 15" % init)
    assert svg.startswith("<?xml") and not bad, "flamegraph.pl's SVG: " + ("; ".join(bad) or "not an SVG")


def chromium(url, profile_dir, extra=()):
    cmd = [shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
           "--user-data-dir=" + profile_dir, "--window-size=1200,900"] + list(extra) + [url]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, "chromium: expected exit 0, got %d: %s" % (r.returncode, r.stderr[-400:])
    return r.stdout


def test_writers_html_chromium(nojdk_ctx, known_files, ensure_tools_log):
    """Headless Chromium runs our flame graph page without a script error,
    draws every section, and the page answers a hover, a search and a
    click (a probe script appended to a copy of the page drives it)."""
    need_tools(ensure_tools_log, "chromium")
    page = read(os.path.join(known_files, "known.html"))
    absent = [name for name in list(FLAT) + list(CUM) if '"%s"' % name not in page]
    assert not absent, "known.html: expected every method name as plain text, missing %s" % absent
    probe = read(os.path.join(os.path.dirname(os.path.abspath(__file__)), "writers", "probe.js"))
    probe_path = nojdk_ctx.path("known-probe.html")
    with open(probe_path, "w") as f:
        f.write(page.replace("</body>", "<script>\n" + probe + "</script>\n</body>"))
    dom = chromium("file://" + probe_path, nojdk_ctx.path("chromium-profile"), ["--dump-dom"])
    with open(nojdk_ctx.path("known-probe.dom.html"), "w") as f:
        f.write(dom)
    m = re.search(r'<p id="fg-status" data-state="(\w+)"[^>]*>([^<]*)</p>', dom)
    errors = re.search(r'<pre id="fg-errors">([^<]*)</pre>', dom)
    assert m and m.group(1) == "ok" and not (errors and errors.group(1).strip()), \
        "expected page state ok without errors; found state %s, errors: %s" % (
            m.group(1) if m else "missing", html.unescape(errors.group(1)) if errors else "?")
    assert "Drew 3 flame graphs (27 frames)" in m.group(2), \
        "expected page status 'Drew 3 flame graphs (27 frames)', found: " + m.group(2)
    static = re.sub(r"<script.*?</script>", "", dom, flags=re.S)
    absent = [text for text in ("Total: 100 samples.", "Total: 1,000,000,000 nanoseconds (cpu).",
                                "baseline: 70 samples", "<td>worker-1</td>") if text not in static]
    assert not absent, "dumped DOM (scripts left out): expected %r, not found" % absent
    probe_out = re.search(r'<pre id="probe">([^<]*)</pre>', dom)
    assert probe_out, "expected the probe's result in <pre id=\"probe\">, found none (script error?)"
    check_probe(json.loads(html.unescape(probe_out.group(1))))
    nojdk_ctx.note("chromium: " + m.group(2))


def check_probe(got):
    want = {
        "main": ["Demo.main", "97 samples", "97.00% of total"],
        "gc": ["[unwalkable].GC_active", "3 samples", "3.00% of total"],
        "init": ["java.util.HashMap.<init>", "15 samples"],
        "cpu_main": ["Demo.main", "970.00 ms"],
        "diff_lambda": ["Demo.lambda$run$0", "before 45 samples (64.29%)", "after 75 samples (75.00%)",
                        "delta +30 samples"],
        "search": ["matched 90.00% (90 samples)"],
        "zoomed_get": ["java.util.HashMap.get", "75 samples", "75.00% of total",
                       "100.00% of Demo.lambda$run$0"],
        "injected_elements": ["0"],
        "row_height": ["26 "],
        # Inverted: leaves by self value on the first row, their callers above.
        "inverted_last_leaf": ["java.util.HashMap.get", "50 samples"],
        "inverted_first_leaf": ["[unwalkable].GC_active", "3 samples"],
        "inverted_caller": ["Demo.lambda$run$0", "50 samples"],
        # By thread: a node per thread on the first row, its stacks above.
        "by_thread_first": ["[thread] (no thread)", "3 samples"],
        "by_thread_last": ["[thread] worker-1", "25 samples"],
        "by_thread_under": ["Demo.main", "25 samples"],
        "by_thread_hidden_without_threads": ["true"],
    }
    bad = ["%s: %r lacks %r" % (k, got.get(k), w) for k, ws in want.items() for w in ws
           if w not in str(got.get(k, ""))]
    assert not bad, "flame graph interaction: " + "; ".join(bad)
