"""The writers over the profile model (src/profile), checked with the tools
people read their output with: `go tool pprof` reads our pprof file,
flamegraph.pl draws our collapsed stacks, headless Chromium runs our flame
graph page.  The profile is build/tests/profile_writers' known profile (its
numbers are below); the tools are installed by scripts/ensure-test-tools
when missing, and a test SKIPs (with the reason) when one still is not there.

    make_tests(Fail, Skip, ROOT, sh) -> [(name, fn)], tests that need no JDK
"""

import html
import json
import os
import re
import shutil
import subprocess

FLAMEGRAPH_PL = "/usr/share/perl5/Devel/NYTProf/flamegraph.pl"   # Debian libdevel-nytprof-perl

# The known profile (tests/writers/profile_writers.c): 100 samples of 10 ms.
TOTAL = 100
FLAT = {"java.util.HashMap.get": 50, "java.lang.String.hashCode": 25, "java.util.HashMap.<init>": 15,
        "java.lang.System.arraycopy": 7, "[unwalkable].GC_active": 3}
CUM = {"Demo.main": 97, "Demo.run": 97, "Demo.lambda$run$0": 75, "java.util.HashMap.get": 75}
LINES = {"java.util.HashMap.get HashMap.java:556": 40, "java.util.HashMap.get HashMap.java:557": 10,
         "java.lang.String.hashCode String.java:2300": 25, "Demo.main Demo.java:20": 0}
THREADS = {"main": 72, "worker-1": 25}


def make_tests(Fail, Skip, root, sh):
    build = os.path.join(root, "build")
    out = os.path.join(build, "tests", "out", "writers")
    state = {}

    def known_files():
        """Build the driver and write the known profile once per run."""
        if "dir" not in state:
            os.makedirs(out, exist_ok=True)
            log = os.path.join(out, "make.log")
            if sh(["make", "-C", root, "build/tests/profile_writers"], log) != 0:
                raise Fail("make build/tests/profile_writers failed, see " + log)
            r = subprocess.run([os.path.join(build, "tests", "profile_writers"), "known", out],
                               capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                raise Fail("profile_writers known: rc %d: %s" % (r.returncode, r.stderr[-300:]))
            state["dir"] = out
        return state["dir"]

    def need_tools(*tools):
        if "tools_rc" not in state:
            log = os.path.join(out, "ensure-test-tools.log")
            os.makedirs(out, exist_ok=True)
            state["tools_rc"] = sh([os.path.join(root, "scripts", "ensure-test-tools")], log, timeout=900)
        missing = [t for t in tools if not (os.path.isfile(t) if t.startswith("/") else shutil.which(t))]
        if missing:
            raise Skip("%s not installed and scripts/ensure-test-tools could not install it (see %s)"
                       % (", ".join(missing), os.path.join(out, "ensure-test-tools.log")))

    def run(cmd, timeout=120):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=out,
                           stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise Fail("%s: rc %d: %s" % (" ".join(cmd[:4]), r.returncode, r.stderr[-400:]))
        return r.stdout

    def pprof_top(path, *options):
        """go tool pprof -top as {name: (flat, cum)} and its header."""
        text = run(["go", "tool", "pprof", "-top", "-nodecount=1000"] + list(options) + [path])
        rows = {}
        for line in text.splitlines():
            m = re.match(r"^\s*(\S+)\s+\S+%\s+\S+%\s+(\S+)\s+\S+%\s+(.+?)\s*$", line)
            if m and m.group(1) != "flat":
                rows[m.group(3)] = (m.group(1), m.group(2))
        return rows, text

    def check_counts(rows, want, column, what):
        bad = ["%s: %s %s, want %s" % (name, what, rows.get(name, ("-", "-"))[column], n)
               for name, n in want.items() if rows.get(name, ("-", "-"))[column] != str(n)]
        if bad:
            raise Fail("go tool pprof disagrees with the profile: " + "; ".join(bad))

    def t_pprof_go(ctx):
        """go tool pprof reads our pprof: totals, per-function flat and
        cumulative counts, file:line, cpu time and thread labels as written."""
        path = os.path.join(known_files(), "known.pb.gz")
        need_tools("go")
        rows, text = pprof_top(path, "-sample_index=samples")
        if "of %d total" % TOTAL not in text:
            raise Fail("go tool pprof -top: no 'of %d total' in: %s" % (TOTAL, text[:300]))
        check_counts(rows, FLAT, 0, "flat")
        check_counts(rows, CUM, 1, "cum")
        rows, text = pprof_top(path, "-lines")
        check_counts(rows, LINES, 0, "flat")
        rows, text = pprof_top(path, "-sample_index=cpu")
        if "Total samples = 1000ms" not in text or rows.get("java.util.HashMap.get", ("",))[0] != "500ms":
            raise Fail("go tool pprof -sample_index=cpu: want 1000ms total, HashMap.get 500ms: " + text[:400])
        tags = run(["go", "tool", "pprof", "-tags", path])
        for thread, n in THREADS.items():
            if not re.search(r"\b%d(\.0)? \([\d.]+%%\): %s$" % (n, re.escape(thread)), tags, re.M):
                raise Fail("go tool pprof -tags: no thread %s with %d samples in: %s" % (thread, n, tags))
        if ctx is not None:
            ctx.note("go tool pprof: %d samples, %d functions as written" % (TOTAL, len(FLAT) + len(CUM)))

    def t_collapsed_flamegraph_pl(ctx):
        """flamegraph.pl draws our collapsed stacks: an SVG with every method
        and the per-frame totals of the profile."""
        path = os.path.join(known_files(), "known.collapsed")
        need_tools(FLAMEGRAPH_PL, "perl")
        svg = run(["perl", FLAMEGRAPH_PL, path])
        with open(os.path.join(out, "known.svg"), "w") as f:
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
        if not svg.startswith("<?xml") or bad:
            raise Fail("flamegraph.pl's SVG: " + ("; ".join(bad) or "not an SVG"))

    def chromium(url, profile_dir, extra=()):
        cmd = [shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
               "--user-data-dir=" + profile_dir, "--window-size=1200,900"] + list(extra) + [url]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise Fail("chromium: rc %d: %s" % (r.returncode, r.stderr[-400:]))
        return r.stdout

    def t_html_chromium(ctx):
        """Headless Chromium runs our flame graph page without a script error,
        draws every section, and the page answers a hover, a search and a
        click (a probe script appended to a copy of the page drives it)."""
        d = known_files()
        need_tools("chromium")
        page = open(os.path.join(d, "known.html")).read()
        for name in list(FLAT) + list(CUM):
            if '"%s"' % name not in page:
                raise Fail("known.html: method name %s not in the file as plain text" % name)
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "writers", "probe.js")) as f:
            probe = f.read()
        probe_path = os.path.join(d, "known-probe.html")
        with open(probe_path, "w") as f:
            f.write(page.replace("</body>", "<script>\n" + probe + "</script>\n</body>"))
        dom = chromium("file://" + probe_path, os.path.join(d, "chromium-profile"), ["--dump-dom"])
        with open(os.path.join(d, "known-probe.dom.html"), "w") as f:
            f.write(dom)
        m = re.search(r'<p id="fg-status" data-state="(\w+)"[^>]*>([^<]*)</p>', dom)
        errors = re.search(r'<pre id="fg-errors">([^<]*)</pre>', dom)
        if not m or m.group(1) != "ok" or (errors and errors.group(1).strip()):
            raise Fail("page state %s, errors: %s" % (m.group(1) if m else "missing",
                                                       html.unescape(errors.group(1)) if errors else "?"))
        if "Drew 3 flame graphs (27 frames)" not in m.group(2):
            raise Fail("page status: " + m.group(2))
        static = re.sub(r"<script.*?</script>", "", dom, flags=re.S)
        for text in ("Total: 100 samples.", "Total: 1,000,000,000 nanoseconds (cpu).",
                     "baseline: 70 samples", "<td>worker-1</td>"):
            if text not in static:
                raise Fail("dumped DOM (scripts left out): no %r" % text)
        probe_out = re.search(r'<pre id="probe">([^<]*)</pre>', dom)
        if not probe_out:
            raise Fail("the probe wrote no result (script error?)")
        got = json.loads(html.unescape(probe_out.group(1)))
        check_probe(got)
        if ctx is not None:
            ctx.note("chromium: " + m.group(2))

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
        if bad:
            raise Fail("flame graph interaction: " + "; ".join(bad))

    return [("writers_pprof_go", t_pprof_go), ("writers_collapsed_flamegraph_pl", t_collapsed_flamegraph_pl),
            ("writers_html_chromium", t_html_chromium)]
