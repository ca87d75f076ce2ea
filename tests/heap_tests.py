"""heap= tests (imported by tests/run.py): allocation sites and heap dumps on
a real JVM, against truths the programs know about themselves.

    heap_sites_exact    AllocTruth's sites: allocated and live objects of
                        every site exactly as the program made them (by new,
                        new[], multianewarray's inner arrays, reflection and
                        clone), live counted after a GC; -Xverify:all
    heap_sites_sampled  heap_sample=4k: the same sites estimated within 30%,
                        and the section marked as estimated
"""

import re

RE_SITES_BEGIN = re.compile(r"^SITES BEGIN \(ordered by live bytes(, estimated from allocation samples "
                            r"every (\d+) bytes)?\) .+$")
SITES_HEAD = ["          percent          live          alloc'ed  stack class",
              " rank   self  accum     bytes objs     bytes  objs trace name"]
RE_SITE_ROW = re.compile(r"^ *(\d+) +(\d{1,3}\.\d\d)% +(\d{1,3}\.\d\d)% +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) (\S+)$")


class SiteRow:
    def __init__(self, m):
        self.rank = int(m.group(1))
        self.self_pct, self.accum_pct = float(m.group(2)), float(m.group(3))
        self.live_bytes, self.live_objs = int(m.group(4)), int(m.group(5))
        self.alloc_bytes, self.alloc_objs = int(m.group(6)), int(m.group(7))
        self.trace, self.cls = int(m.group(8)), m.group(9)


def sites_sections(path, Fail):
    """[(sample_interval or 0, [SiteRow])] of every SITES section, checked
    strictly: header lines, consecutive ranks, ordered by live bytes, self
    the share of live bytes, accum the running sum, live <= allocated."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = RE_SITES_BEGIN.match(lines[i])
        if not m:
            i += 1
            continue
        interval = int(m.group(2)) if m.group(2) else 0
        if lines[i + 1:i + 3] != SITES_HEAD:
            raise Fail("SITES: bad column lines %r" % lines[i + 1:i + 3])
        rows, j = [], i + 3
        while j < len(lines) and lines[j] != "SITES END":
            r = RE_SITE_ROW.match(lines[j])
            if not r:
                raise Fail("SITES: malformed row %r" % lines[j])
            row = SiteRow(r)
            if row.rank != len(rows) + 1:
                raise Fail("SITES: rank %d after %d" % (row.rank, len(rows)))
            if rows and row.live_bytes > rows[-1].live_bytes:
                raise Fail("SITES: rows not ordered by live bytes at rank %d" % row.rank)
            if row.live_objs > row.alloc_objs or row.live_bytes > row.alloc_bytes:
                raise Fail("SITES: more live than allocated at rank %d: %r" % (row.rank, lines[j]))
            rows.append(row)
            j += 1
        if j >= len(lines):
            raise Fail("SITES: no SITES END")
        total_live = sum(r.live_bytes for r in rows)
        accum = 0.0
        for r in rows:
            share = 100.0 * r.live_bytes / total_live if total_live else 0.0
            accum += share
            if abs(share - r.self_pct) > 0.011 or abs(accum - r.accum_pct) > 0.05:
                raise Fail("SITES: rank %d: self %.2f%%/accum %.2f%%, expected %.2f%%/%.2f%%"
                           % (r.rank, r.self_pct, r.accum_pct, share, accum))
        out.append((interval, rows))
        i = j + 1
    if not out:
        raise Fail("no SITES section in %s" % path)
    return out


def truths(stderr, Fail):
    """The program's "TRUTH <class> <frame> <allocated> <live>" lines."""
    t = [l.split() for l in stderr.splitlines() if l.startswith("TRUTH ")]
    if not t:
        raise Fail("the program printed no TRUTH lines: %s" % stderr[-500:])
    return [(c, f, int(a), int(l)) for _, c, f, a, l in t]


def site_totals(prof, rows, cls, frame):
    """(allocated objs, live objs, allocated bytes, live bytes) summed over
    the rows of class `cls` whose trace has a frame `frame`."""
    tot = [0, 0, 0, 0]
    for r in rows:
        tr = prof.traces.get(r.trace)
        if r.cls == cls and tr is not None and tr.has_method(frame):
            tot[0] += r.alloc_objs
            tot[1] += r.live_objs
            tot[2] += r.alloc_bytes
            tot[3] += r.live_bytes
    return tot


def make_tests(Fail, parse_profile):
    def check_traces_written(prof, rows, problems):
        missing = sorted({r.trace for r in rows if r.trace not in prof.traces})
        if missing:
            problems.append("traces used by SITES but never written: %s" % missing[:10])

    def t_heap_sites_exact(ctx):
        path = ctx.path("sites.txt")
        r = ctx.run("AllocTruth", [], agent="heap=sites,depth=16,cutoff=0,file=" + path, jvm=["-Xverify:all"])
        want = truths(r.stderr, Fail)
        interval, rows = sites_sections(path, Fail)[-1]
        prof = parse_profile(path)
        problems = []
        check_traces_written(prof, rows, problems)
        if interval:
            problems.append("exact SITES marked as estimated")
        for cls, frame, alloc, live in want:
            got = site_totals(prof, rows, cls, frame)
            if got[0] != alloc or got[1] != live:
                problems.append("%s at %s: %d allocated, %d live; expected exactly %d and %d"
                                % (cls, frame, got[0], got[1], alloc, live))
            elif alloc and (got[2] % alloc or (live and got[3] * alloc != got[2] * live)):
                problems.append("%s at %s: bytes %d/%d not a whole size per object" % (cls, frame, got[2], got[3]))
        if problems:
            raise Fail("; ".join(problems))
        ctx.note("every site exact (%d truths), %d rows" % (len(want), len(rows)))

    def t_heap_sites_sampled(ctx):
        path = ctx.path("sampled.txt")
        r = ctx.run("AllocTruth", [], agent="heap=sites,heap_sample=4k,depth=16,cutoff=0,file=" + path)
        want = truths(r.stderr, Fail)
        interval, rows = sites_sections(path, Fail)[-1]
        prof = parse_profile(path)
        problems = []
        check_traces_written(prof, rows, problems)
        if interval != 4096:
            problems.append("SITES not marked as estimated every 4096 bytes (got %r)" % interval)
        notes = []
        # Only sites with enough bytes for the estimate to be tight: at 4 KiB
        # per sample, 600 KB is ~146 samples (a standard error ~8%).
        for cls, frame, alloc, live in want:
            got = site_totals(prof, rows, cls, frame)
            if cls == "AllocTruth$Small" or (cls == "int[]" and frame.endswith("makeInts")):
                per = got[2] / got[0] if got[0] else 0
                for what, est, true in (("allocated", got[0], alloc), ("live", got[1], live)):
                    if true * per >= 500000 and abs(est - true) > 0.3 * true:
                        problems.append("%s at %s: %s %d estimated, truth %d (over 30%% off)"
                                        % (cls, frame, what, est, true))
                    notes.append("%s %s %d/%d" % (cls.split("$")[-1], what, est, true))
        if problems:
            raise Fail("; ".join(problems))
        ctx.note("estimates: " + ", ".join(notes))

    return [("heap_sites_exact", t_heap_sites_exact), ("heap_sites_sampled", t_heap_sites_sampled)]
