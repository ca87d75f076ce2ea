"""Helpers of the heap= tests shared by several test modules (no tests here):
the SITES and HEAP DUMP sections of a text profile read strictly, the
allocation truths the programs print, the sites' totals by class and frame,
and the natives of the programs that allocate through JNI.

    rows = heap_sites.sites_sections(path)[-1][1]   # the last SITES section
    want = heap_sites.site_truths(r.stderr)         # [(class, frame, allocated, live)]
    heap_sites.site_totals(prof, rows, cls, frame)  # [alloc objs, live objs, alloc bytes, live bytes]
    n_objs, n_bytes, records, refs = heap_sites.text_heap_dump(path)

Every malformed section raises run.Fail saying what is wrong in which file.
tests/hprof_text.py accepts these sections without reading them; the binary
heap dump is tests/hprof_reader.py's.
"""

import os
import re
import subprocess

from run import BUILD, ROOT, Fail, tail

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


def sites_sections(path):
    """[(sample_interval or 0, [SiteRow])] of every SITES section, checked
    strictly: header lines, consecutive ranks, ordered by live bytes, self
    the share of live bytes, accum the running sum, live <= allocated."""
    lines = open(path, encoding="utf-8").read().split("\n")
    where = os.path.basename(path)
    out, i = [], 0
    while i < len(lines):
        m = RE_SITES_BEGIN.match(lines[i])
        if not m:
            i += 1
            continue
        interval = int(m.group(2)) if m.group(2) else 0
        if lines[i + 1:i + 3] != SITES_HEAD:
            raise Fail("%s: SITES: bad column lines %r" % (where, lines[i + 1:i + 3]))
        rows, j = [], i + 3
        while j < len(lines) and lines[j] != "SITES END":
            r = RE_SITE_ROW.match(lines[j])
            if not r:
                raise Fail("%s: SITES: malformed row %r" % (where, lines[j]))
            row = SiteRow(r)
            if row.rank != len(rows) + 1:
                raise Fail("%s: SITES: rank %d after %d" % (where, row.rank, len(rows)))
            if rows and row.live_bytes > rows[-1].live_bytes:
                raise Fail("%s: SITES: rows not ordered by live bytes at rank %d" % (where, row.rank))
            if row.live_objs > row.alloc_objs or row.live_bytes > row.alloc_bytes:
                raise Fail("%s: SITES: more live than allocated at rank %d: %r" % (where, row.rank, lines[j]))
            rows.append(row)
            j += 1
        if j >= len(lines):
            raise Fail("%s: SITES: no SITES END" % where)
        total_live = sum(r.live_bytes for r in rows)
        accum = 0.0
        for r in rows:
            share = 100.0 * r.live_bytes / total_live if total_live else 0.0
            accum += share
            if abs(share - r.self_pct) > 0.011 or abs(accum - r.accum_pct) > 0.05:
                raise Fail("%s: SITES: rank %d: self %.2f%%/accum %.2f%%, expected %.2f%%/%.2f%%"
                           % (where, r.rank, r.self_pct, r.accum_pct, share, accum))
        out.append((interval, rows))
        i = j + 1
    if not out:
        raise Fail("no SITES section in %s" % path)
    return out


def site_truths(stderr):
    """The program's "TRUTH <class> <frame> <allocated> <live>" lines
    (AllocTruth, JniAlloc, Evict, ClassUnload)."""
    t = [l.split() for l in stderr.splitlines() if l.startswith("TRUTH ")]
    if not t:
        raise Fail("the program printed no TRUTH lines: %s" % stderr[-500:])
    # A hidden class (a lambda's) is Foo$$Lambda/0x... to Class.getName and
    # Foo$$Lambda.0x... in profiles, as HPROF names classes.
    return [(c.replace("/", "."), f, int(a), int(l)) for _, c, f, a, l in t]


def site_totals(prof, rows, cls, frame):
    """[allocated objs, live objs, allocated bytes, live bytes] summed over
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


RE_DUMP_BEGIN = re.compile(r"^HEAP DUMP BEGIN \((\d+) objects, (\d+) bytes\) .+$")
RE_RECORD = re.compile(r"^(ROOT|CLS|OBJ|ARR) ([0-9a-f]+) \((.*)\)$")
RE_FIELD = re.compile(r"^\t(.+?)\t+([0-9a-f]+)$")


def text_heap_dump(path):
    """The last HEAP DUMP section of a text profile: (header objects, header
    bytes, {id: (kind, attrs)}, [(from id, field, to id)])."""
    lines = open(path, encoding="utf-8").read().split("\n")
    where = os.path.basename(path)
    starts = [i for i, l in enumerate(lines) if RE_DUMP_BEGIN.match(l)]
    if not starts:
        raise Fail("no HEAP DUMP section in %s" % path)
    m = RE_DUMP_BEGIN.match(lines[starts[-1]])
    records, refs, cur = {}, [], None
    for l in lines[starts[-1] + 1:]:
        if l == "HEAP DUMP END":
            return int(m.group(1)), int(m.group(2)), records, refs
        r = RE_RECORD.match(l)
        if r:
            attrs = dict(kv.split("=", 1) for kv in r.group(3).split(", ") if "=" in kv)
            oid = int(r.group(2), 16)
            if r.group(1) != "ROOT":
                if oid in records:
                    raise Fail("%s: HEAP DUMP: id %x written twice" % (where, oid))
                records[oid] = (r.group(1), attrs)
            else:
                refs.append((0, "root " + attrs.get("kind", "?"), oid))
            cur = oid
            continue
        f = RE_FIELD.match(l)
        if not f or cur is None:
            raise Fail("%s: HEAP DUMP: malformed line %r" % (where, l))
        refs.append((cur, f.group(1), int(f.group(2), 16)))
    raise Fail("%s: HEAP DUMP: no HEAP DUMP END" % where)


def natives(name):
    """build/tests/<name>, the natives of a test program (made by `make
    test`), built here if missing; its path."""
    lib = os.path.join(BUILD, "tests", name)
    if not os.path.isfile(lib):
        r = subprocess.run(["make", "-C", ROOT, "build/tests/" + name], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise Fail("cannot build build/tests/%s: %s" % (name, tail(r.stdout + r.stderr)))
    return lib
