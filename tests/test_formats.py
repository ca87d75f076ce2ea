"""The output formats' corpus (pytest tests): `hprof convert`
of files the agent wrote, into every format, compared with what the build
before the table of formats (src/profile/formats.c) and the shared HPROF
text layout (src/output/text_sections.c) wrote.

    formats_corpus      each file of tests/data/formats (CpuSplit text and
                        binary, AllocTruth's SITES exact and sampled,
                        Contention's MONITOR TIME and WAIT TIME, TimesTruth's
                        CPU TIME) converted to text, collapsed, flamegraph,
                        pprof and jfr (and --profile wait): the exit status,
                        the messages and the bytes are those recorded in
                        tests/data/formats/expected, dates and the JFR
                        chunk's start time masked (text and collapsed are
                        kept whole there, the others as SHA-256)

`python3 tests/test_formats.py --record [HPROF]` writes expected/ again from
HPROF (default build/hprof): only for a change of output that is meant.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS_DIR)
CORPUS = os.path.join(TESTS_DIR, "data", "formats")
EXPECTED = os.path.join(CORPUS, "expected")
INPUTS = ["cpu.txt", "cpu.hprof", "sites.txt", "sites_sampled.txt", "monitor.txt", "times.txt"]
FORMATS = ["text", "collapsed", "flamegraph", "pprof", "jfr"]
KEPT_WHOLE = ("text", "collapsed")
RE_DATE = re.compile(rb"[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} [0-9]{4}")


def cases():
    for name in INPUTS:
        for to in FORMATS:
            yield name, to, None
    for to in ("collapsed", "pprof"):
        yield "monitor.txt", to, "wait"


def case_name(name, to, profile):
    return "%s.%s%s" % (name, to, "." + profile if profile else "")


def mask(to, data):
    """What may differ between two conversions of one file: the dates of
    the text header (now), the JFR chunk's start (now, for a profile
    without times: bytes 32-39 of the header)."""
    if to == "jfr" and len(data) >= 40:
        return data[:32] + b"\0" * 8 + data[40:]
    return RE_DATE.sub(b"<date>", data)


def convert(hprof, name, to, profile, tmp):
    out = os.path.join(tmp, "out")
    if os.path.exists(out):
        os.unlink(out)
    args = [hprof, "convert", name, "--to", to] + (["--profile", profile] if profile else []) + ["-o", out]
    r = subprocess.run(args, cwd=CORPUS, capture_output=True, timeout=120)
    data = open(out, "rb").read() if os.path.exists(out) else b""
    stderr = r.stderr.decode("utf-8", "replace").replace(out, "<out>")
    return r.returncode, mask(to, data), stderr


def record(hprof):
    os.makedirs(EXPECTED, exist_ok=True)
    manifest = {}
    tmp = tempfile.mkdtemp(prefix="hprof-formats-")
    try:
        for name, to, profile in cases():
            rc, data, stderr = convert(hprof, name, to, profile, tmp)
            case = case_name(name, to, profile)
            manifest[case] = {"rc": rc, "sha256": hashlib.sha256(data).hexdigest(), "stderr": stderr}
            if to in KEPT_WHOLE and rc == 0:
                with open(os.path.join(EXPECTED, case), "wb") as f:
                    f.write(data)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(EXPECTED, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")


def test_formats_corpus(nojdk_ctx, built):
    hprof = os.path.join(ROOT, "build", "hprof")
    manifest = json.load(open(os.path.join(EXPECTED, "manifest.json")))
    problems = []
    tmp = tempfile.mkdtemp(prefix="hprof-formats-")
    try:
        for name, to, profile in cases():
            case = case_name(name, to, profile)
            want = manifest.get(case)
            if want is None:
                problems.append("%s: not in expected/manifest.json" % case)
                continue
            rc, data, stderr = convert(hprof, name, to, profile, tmp)
            with open(nojdk_ctx.path(case), "wb") as f:
                f.write(data)
            if rc != want["rc"] or stderr != want["stderr"]:
                problems.append("%s: exit %d, %r (want %d, %r)" % (case, rc, stderr, want["rc"], want["stderr"]))
            elif hashlib.sha256(data).hexdigest() != want["sha256"]:
                whole = os.path.join(EXPECTED, case)
                problems.append("%s: other bytes than recorded (%s)" % (
                    case, "diff %s %s" % (whole, nojdk_ctx.path(case)) if os.path.exists(whole)
                    else "masked output in %s" % nojdk_ctx.out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert not problems, "expected the recorded exit, messages and bytes of every conversion; found: " + \
        "; ".join(problems[:6]) + (" (and %d more)" % (len(problems) - 6) if len(problems) > 6 else "")


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--record":
        record(os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.join(ROOT, "build", "hprof"))
    else:
        sys.exit(__doc__)
