"""The front end's analysis commands (pytest tests, run on each JDK with the
ctx fixture of tests/conftest.py): build/hprof report, convert and diff on
files the real agent wrote for programs whose true profile is known. The
report's tables are read by tests/hprof_report.py, the text files by
tests/hprof_text.py, the binary ones by tests/hprof_reader.py.

    frontend_report_cpu      CpuSplit (partA ~70% of the worker's CPU) with
                             cpu=samples in text and in binary: `hprof report`
                             ranks CpuSplit.partA first by self, and partA's
                             share of partA+partB is the program's truth
                             within 3 points
    frontend_convert         collapsed totals equal the text file's CPU
                             SAMPLES total; `--to text` of the binary file
                             parses with tests/hprof_text.py (strict) with
                             the binary's total and per-trace counts; pprof
                             is a gzip file; a damaged file is refused with
                             a message naming it
    frontend_diff            WorkShift at 80% then 20% in alpha: `hprof diff`
                             says alpha's share shrank and beta's grew, by
                             about the 60 points the switch moved
    frontend_diff_lambdas    two heap=sites runs of AllocTruth, whose
                             lambda class is AllocTruth$$Lambda.0x<address>
                             at another address in each run (JDK 25):
                             `hprof diff` matches it, no row changes, no
                             address in the output nor in its differential
                             flame graph
    frontend_alloc           AllocTruth with heap=sites (text and binary):
                             the report's class table shows 100,000
                             AllocTruth$Small allocated, 25,000 live, and
                             3,000 long[][]
    frontend_html            `report --html` of a CpuSplit file loads in
                             headless Chromium, which shows the method names
"""

import gzip
import os
import re
import shutil
import subprocess

import pytest

import hprof_reader
import hprof_report
import hprof_text
from hprof_report import HPROF
from run import parse_profile, truth_of


def hprof(ctx, args, expect_rc=0):
    """build/hprof ARGS in the test's directory, logged there; fails on
    another exit status than expect_rc (None: any)."""
    r = subprocess.run([HPROF] + args, capture_output=True, text=True, timeout=120, cwd=ctx.out)
    with open(ctx.path("hprof-%d.log" % len(ctx.notes)), "w") as f:
        f.write("$ hprof %s\nrc %d\n%s\n%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
    if expect_rc is not None:
        assert r.returncode == expect_rc, "hprof %s: expected exit %d, got %d: %s" % (
            " ".join(args), expect_rc, r.returncode, (r.stderr or r.stdout).strip()[-400:])
    return r


def table(report, title):
    try:
        return hprof_report.table(report, title)
    except hprof_report.ReportError as e:
        pytest.fail(str(e), pytrace=False)


def cpu_truth(stderr):
    """CpuSplit's true share of partA in partA+partB."""
    a_ns, b_ns, _worker_ns = truth_of(stderr)
    return a_ns / float(a_ns + b_ns)


def check_cpu_report(ctx, path, truth, problems):
    rep = hprof(ctx, ["report", path, "--top", "10"]).stdout
    rows = table(rep, "Top methods by self")
    self_of = {m.group(6): float(m.group(3)) for m in rows}
    if not rows or rows[0].group(6) != "CpuSplit.partA":
        problems.append("%s: the top method by self is %s, not CpuSplit.partA"
                        % (os.path.basename(path), rows[0].group(6) if rows else None))
        return
    a, b = self_of.get("CpuSplit.partA", 0), self_of.get("CpuSplit.partB", 0)
    share = a / (a + b) if a + b else 0
    ctx.note("%s: report partA %d, partB %d samples: %.1f%% (truth %.1f%%)"
             % (os.path.basename(path), a, b, 100 * share, 100 * truth))
    if a + b < 300 or abs(share - truth) > 0.03:
        problems.append("%s: partA share %.1f%% (of %d samples) not within 3 points of the truth %.1f%%"
                        % (os.path.basename(path), 100 * share, a + b, 100 * truth))
    totals = {m.group(6): float(m.group(5)) for m in table(rep, "Top methods by total")}
    if totals.get("CpuSplit.workerLoop", 0) < a + b:
        problems.append("workerLoop's total %s is below partA+partB %d" % (totals.get("CpuSplit.workerLoop"), a + b))


def cpu_runs(ctx):
    """CpuSplit in text and in binary: (text path, binary path, truths)."""
    txt, binf = ctx.path("cpu.hprof.txt"), ctx.path("cpu.hprof")
    r1 = ctx.run("CpuSplit", ["3000"], agent="cpu=samples,interval=1,depth=16,thread=y,file=" + txt)
    r2 = ctx.run("CpuSplit", ["3000"], agent="cpu=samples,interval=1,depth=16,format=b,file=" + binf)
    return txt, binf, cpu_truth(r1.stderr), cpu_truth(r2.stderr)


def test_frontend_report_cpu(ctx):
    txt, binf, truth_t, truth_b = cpu_runs(ctx)
    problems = []
    check_cpu_report(ctx, txt, truth_t, problems)
    check_cpu_report(ctx, binf, truth_b, problems)
    assert not problems, "; ".join(problems)


def collapsed_total(ctx, path, out):
    hprof(ctx, ["convert", path, "--to", "collapsed", "-o", out])
    try:
        return sum(count for _stack, count in hprof_text.parse_collapsed_file(out))
    except hprof_text.ParseError as e:
        pytest.fail("%s: expected collapsed stacks: %s" % (out, e), pytrace=False)


def test_frontend_convert(ctx):
    txt, binf, _t, _b = cpu_runs(ctx)
    problems = []
    text_total = parse_profile(txt).final.total
    col = collapsed_total(ctx, txt, ctx.path("cpu.collapsed"))
    ctx.note("text: CPU SAMPLES total %d, collapsed total %d" % (text_total, col))
    if col != text_total:
        problems.append("collapsed total %d != the text file's CPU SAMPLES total %d" % (col, text_total))
    # binary -> text, read by the strict parser
    bin_total, bin_rows = hprof_reader.read(binf).cpu_samples[-1]
    hprof(ctx, ["convert", binf, "--to", "text", "-o", ctx.path("from-binary.txt")])
    conv = parse_profile(ctx.path("from-binary.txt"))
    by_trace = {r.trace: r.count for r in conv.final.rows}
    want = {trace: count for count, trace in bin_rows}
    ctx.note("binary: CPU SAMPLES total %d in %d traces; as text: total %d in %d rows"
             % (bin_total, len(want), conv.final.total, len(by_trace)))
    if conv.final.total != bin_total or by_trace != want:
        problems.append("--to text: total %d / %d rows, the binary file has %d / %d"
                        % (conv.final.total, len(by_trace), bin_total, len(want)))
    bcol = collapsed_total(ctx, binf, ctx.path("cpu-bin.collapsed"))
    if bcol != bin_total:
        problems.append("collapsed total of the binary file %d != its total %d" % (bcol, bin_total))
    hprof(ctx, ["convert", txt, "--to", "pprof", "-o", ctx.path("cpu.pb.gz")])
    with gzip.open(ctx.path("cpu.pb.gz"), "rb") as f:
        size = len(f.read())
    if size < 100:
        problems.append("pprof output is nearly empty (%d bytes unzipped)" % size)
    # a damaged copy: refused, naming the file, no crash
    with open(binf, "rb") as f:
        data = f.read()
    cut = ctx.path("cut.hprof")
    with open(cut, "wb") as f:
        f.write(data[:len(data) * 2 // 3])
    r = hprof(ctx, ["report", cut], expect_rc=1)
    if "cut.hprof" not in r.stderr or "truncated" not in r.stderr:
        problems.append("a truncated binary file: expected a message naming cut.hprof and 'truncated', found %r"
                        % r.stderr.strip())
    assert not problems, "; ".join(problems)


def test_frontend_diff(ctx):
    before, after = ctx.path("before.hprof.txt"), ctx.path("after.hprof.txt")
    ctx.run("WorkShift", ["2000", "80"], agent="cpu=samples,interval=1,depth=16,file=" + before)
    ctx.run("WorkShift", ["2000", "20"], agent="cpu=samples,interval=1,depth=16,file=" + after)
    out = hprof(ctx, ["diff", before, after]).stdout
    # spin() is the leaf in both runs: the switch shows in alpha's and beta's totals
    totals = {m.group(7): float(m.group(1)) for m in table(out, "Methods by change of total")}
    alpha, beta = totals.get("WorkShift.alpha"), totals.get("WorkShift.beta")
    ctx.note("diff: alpha %s points, beta %s points (the switch moved 60)" % (alpha, beta))
    assert alpha is not None and beta is not None and -75 < alpha < -45 and 45 < beta < 75, \
        "diff: alpha's total share changed by %s points, beta's by %s (want about -60 and +60)" % (alpha, beta)
    stacks = table(out, "Stacks by change of share")
    assert stacks and ("WorkShift.alpha" in stacks[0].group(7) or "WorkShift.beta" in stacks[0].group(7)), \
        "diff: expected alpha's or beta's stack to change most, found %s" % (stacks[0].group(7) if stacks else None)


def test_frontend_diff_lambdas(ctx):
    paths = [ctx.path("lambdas-%d.hprof.txt" % i) for i in (1, 2)]
    names = []
    for p in paths:
        ctx.run("AllocTruth", [], agent="heap=sites,depth=8,cutoff=0,file=" + p)
        with open(p) as f:
            names.append(sorted(set(re.findall(r"AllocTruth\$\$Lambda\S*", f.read()))))
    out = hprof(ctx, ["diff", paths[0], paths[1]]).stdout
    ctx.note("lambda classes: %s, then %s; %s" % (names[0], names[1],
             "the same name in both runs (the test shows nothing here)" if names[0] == names[1]
             else "other addresses"))
    # Rows of a diff: change before% after% before after delta name.
    rows = [line.strip() for line in out.splitlines() if "0x" in line or
            ("$$Lambda" in line and not re.match(r"^\s*\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+0\s", line))]
    assert not rows, "expected hprof diff of two runs of the same program to show no lambda, found: %s" % rows[:4]
    # The differential flame graph merges the two runs' stacks the same way.
    page = ctx.path("lambdas-diff.html")
    hprof(ctx, ["diff", paths[0], paths[1], "--to", "flamegraph", "-o", page])
    with open(page, errors="replace") as f:
        html = f.read()
    assert "$$Lambda" in html and not re.search(r"\$\$Lambda(\$\d+)?\.0x", html), \
        "the differential flame graph %s: expected lambdas without addresses; it %s" % (
            page, "names no lambda" if "$$Lambda" not in html else "keeps a lambda's address")


def test_frontend_alloc(ctx):
    problems = []
    for fmt in ("", ",format=b"):
        path = ctx.path("sites" + (".hprof" if fmt else ".txt"))
        ctx.run("AllocTruth", [], agent="heap=sites,depth=8,cutoff=0%s,file=%s" % (fmt, path))
        classes = hprof_report.classes(hprof(ctx, ["report", path, "--top", "40"]).stdout)
        small, grids = classes.get("AllocTruth$Small"), classes.get("long[][]")
        ctx.note("%s: AllocTruth$Small %s, long[][] %s (live bytes, live, alloc'ed bytes, alloc'ed)"
                 % (os.path.basename(path), small, grids))
        if not small or small[3] != 100000 or small[1] != 25000:
            problems.append("%s: AllocTruth$Small %s, want 100,000 allocated and 25,000 live" % (path, small))
        if not grids or grids[3] != 3000 or grids[1] != 3000:
            problems.append("%s: long[][] %s, want 3,000 allocated and live" % (path, grids))
    assert not problems, "; ".join(problems)


def test_frontend_html(ctx):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        pytest.skip("no chromium (Debian package chromium): the HTML report is not loaded in a browser")
    txt = ctx.path("cpu.hprof.txt")
    ctx.run("CpuSplit", ["1500"], agent="cpu=samples,interval=1,depth=16,file=" + txt)
    page = ctx.path("report.html")
    hprof(ctx, ["report", txt, "--html", "-o", page])
    r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                        "file://" + page], capture_output=True, text=True, timeout=120)
    dom = r.stdout
    ctx.note("chromium: %d bytes of DOM from a %d-byte page" % (len(dom), os.path.getsize(page)))
    missing = [m for m in ("CpuSplit.partA", "CpuSplit.partB", "CpuSplit.workerLoop") if m not in dom]
    assert r.returncode == 0 and not missing, "chromium: expected exit 0 and every method shown; exit %d, " \
        "missing %s: %s" % (r.returncode, missing, r.stderr.strip()[-300:])
