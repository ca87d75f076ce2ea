"""An independent reader of pprof files (profile.proto, gzipped): what the
tests of pprof= and of `convert --to pprof` read them with.

    import pprof_reader
    pp = pprof_reader.read_pprof("cpu.pb.gz")   # PprofError if missing or malformed
    pp.sample_types        # [("samples", "count"), ("cpu", "nanoseconds")]
    pp.samples             # [(frames leaf first: [(name, file, line)], values, thread label)]
    pp.labels              # per sample: {key: value} of its string labels
    pp.total("samples"); pp.by_leaf("cpu")
"""

import gzip
import os
import re
import shutil
import subprocess
from collections import Counter


class PprofError(Exception):
    pass


# ---------------------------------------------------------------- pprof reader
# profile.proto (github.com/google/pprof, proto/profile.proto), decoded here
# independently of the agent's writer: only the fields the tests read.

def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def _fields(b):
    """(field number, wire type, value) of one message: an int, or bytes."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt in (1, 5):
            n = 8 if wt == 1 else 4
            v, i = int.from_bytes(b[i:i + n], "little"), i + n
        else:
            raise ValueError("wire type %d" % wt)
        yield field, wt, v


def _ints(wt, v):
    """A repeated integer field: packed (bytes) or one varint; int64 signed."""
    out, i = [], 0
    if wt == 0:
        out = [v]
    else:
        while i < len(v):
            x, i = _varint(v, i)
            out.append(x)
    return [x - (1 << 64) if x >= 1 << 63 else x for x in out]


class Pprof:
    def __init__(self, data):
        strings, types, samples, locations, functions = [], [], [], {}, {}
        self.period, period_type, default_type = 0, None, 0
        for f, wt, v in _fields(data):
            if f == 1:
                types.append(dict((k, x) for k, _, x in _fields(v)))
            elif f == 2:
                locs, values, labels = [], [], []
                for g, gwt, x in _fields(v):
                    if g == 1:
                        locs += _ints(gwt, x)
                    elif g == 2:
                        values += _ints(gwt, x)
                    elif g == 3:
                        labels.append(dict((k, y) for k, _, y in _fields(x)))
                samples.append((locs, values, labels))
            elif f == 4:
                lid, lines = 0, []
                for g, _, x in _fields(v):
                    if g == 1:
                        lid = x
                    elif g == 4:
                        ln = dict((k, y) for k, _, y in _fields(x))
                        lines.append((ln.get(1, 0), ln.get(2, 0)))
                locations[lid] = lines
            elif f == 5:
                fn = dict((k, x) for k, _, x in _fields(v))
                functions[fn.get(1, 0)] = fn
            elif f == 6:
                strings.append(v.decode("utf-8"))
            elif f == 11:
                period_type = dict((k, x) for k, _, x in _fields(v))
            elif f == 12:
                self.period = v
            elif f == 14:
                default_type = v
        s = lambda k: strings[k] if k < len(strings) else "?"  # noqa: E731
        self.sample_types = [(s(t.get(1, 0)), s(t.get(2, 0))) for t in types]
        self.period_type = (s(period_type.get(1, 0)), s(period_type.get(2, 0))) if period_type else None
        self.default_type = s(default_type) if default_type else None
        # Frames leaf first: (name, file, line), one per location line.
        self.samples = []
        self.labels = []            # per sample, parallel to samples: {key: value} of its string labels
        for locs, values, labels in samples:
            self.labels.append({s(l.get(1, 0)): s(l.get(2, 0)) for l in labels})
            frames = []
            for lid in locs:
                for fid, line in locations[lid]:
                    fn = functions[fid]
                    frames.append((s(fn.get(2, 0)), s(fn.get(4, 0)), line))
            thread = [s(l.get(2, 0)) for l in labels if s(l.get(1, 0)) == "thread"]
            self.samples.append((frames, values, thread[0] if thread else None))

    def index(self, type_name):
        return [t for t, _ in self.sample_types].index(type_name)

    def total(self, type_name):
        k = self.index(type_name)
        return sum(v[k] for _, v, _ in self.samples)

    def by_leaf(self, type_name):
        k = self.index(type_name)
        out = Counter()
        for frames, v, _ in self.samples:
            if v[k]:
                out[frames[0][0] if frames else "<empty>"] += v[k]
        return out


def read_pprof(path):
    """The Pprof of a gzipped profile.proto file; PprofError saying what is
    wrong when it is missing or malformed."""
    if not os.path.isfile(path):
        raise PprofError("pprof file %s was not written" % path)
    try:
        with gzip.open(path, "rb") as f:
            return Pprof(f.read())
    except (OSError, ValueError, IndexError, KeyError, UnicodeDecodeError) as e:
        raise PprofError("%s: not a valid pprof file: %r" % (os.path.basename(path), e)) from None


def go_pprof_total(ctx, path, sample_index):
    """What `go tool pprof -top` counts in total, or None without go."""
    go = shutil.which("go")
    if go is None:
        return None
    env = dict(os.environ, HOME=ctx.out, GOCACHE=ctx.path("gocache"), PPROF_TMPDIR=ctx.out)
    p = subprocess.run([go, "tool", "pprof", "-top", "-sample_index=" + sample_index, path],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, env=env,
                       stdin=subprocess.DEVNULL)
    out = p.stdout.decode("utf-8", "replace")
    with open(ctx.path("go-pprof-top.txt"), "w") as f:
        f.write(out)
    m = re.search(r"of (\d+) total", out) or re.search(r"accounting for (\d+), 100% of", out)
    return (p.returncode, int(m.group(1)) if m else None, out)
