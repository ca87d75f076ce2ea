"""Safety of the files the agent writes (pytest tests, run on each JDK with the ctx fixture of tests/conftest.py).

    files_links_refused   file= naming a symbolic link to another file: the
                          JVM refuses to start, the message names file=, the
                          path and says "remove the link or name the real
                          file", the target is unchanged; a dangling link
                          likewise (nothing created where it points); pprof=
                          naming a link and collapsed= naming a directory are
                          refused at start-up the same way
    files_heap_dump_0600  heap=dump,format=b under umask 022: the dump is
                          0600 (as jcmd GC.heap_dump), also when it overwrites
                          a 0644 file (force=y); it is a complete HPROF file
    files_mode_umask      cpu=samples under umask 022: file= is 0644; under
                          umask 0: file= and pprof= (written through a
                          temporary file renamed) are 0664, never o+w, and no
                          temporary file is left
    files_cli_outputs     hprof convert -o and hprof report --html -o, on
                          files the agent wrote: a symbolic link at -o is
                          refused (the file behind it unchanged), a directory
                          too; made from a heap dump the output is 0600, from
                          a CPU profile 0644 under umask 022 and 0664 under
                          umask 0
"""

import os
import stat
import subprocess

import pytest

from run import BUILD

HPROF = os.path.join(BUILD, "hprof")


def run_umask(ctx, mask, *args, **kw):
    # Tests run one at a time: the JVM inherits this umask.
    old = os.umask(mask)
    try:
        return ctx.run(*args, **kw)
    finally:
        os.umask(old)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def refused(ctx, agent, option, path, words):
    r = ctx.run("Busy", ["200"], agent=agent, expect_rc="nonzero")
    missing = [w for w in [option + "=", path] + words if w not in r.stderr]
    if missing or "Busy: done" in r.stdout:
        pytest.fail("%s=%s: expected the JVM to refuse to start with a message holding %s; stderr: %s"
                    % (option, path, missing, r.stderr[-400:]))


def test_files_links_refused(ctx):
    victim = ctx.path("victim.txt")
    content = "another file of the same user; must not change\n"
    with open(victim, "w") as f:
        f.write(content)
    link = ctx.path("link.txt")
    os.symlink(victim, link)
    refused(ctx, "cpu=samples,file=" + link, "file", link,
            ["symbolic link", "remove the link or name the real file"])
    if open(victim).read() != content:
        pytest.fail("the file behind the link was changed")
    if not os.path.islink(link):
        pytest.fail("the link itself was replaced")

    missing = ctx.path("nowhere.txt")
    dangling = ctx.path("dangling.txt")
    os.symlink(missing, dangling)
    refused(ctx, "cpu=samples,file=" + dangling, "file", dangling, ["symbolic link"])
    if os.path.lexists(missing):
        pytest.fail("a file was created where the dangling link points: %s" % missing)

    plink = ctx.path("p.pb.gz")
    os.symlink(victim, plink)
    refused(ctx, "cpu=samples,file=%s,pprof=%s" % (ctx.path("prof.txt"), plink), "pprof", plink,
            ["symbolic link", "remove the link or name the real file"])
    if open(victim).read() != content:
        pytest.fail("pprof=: the file behind the link was changed")

    d = ctx.path("adir")
    os.mkdir(d)
    refused(ctx, "cpu=samples,file=%s,collapsed=%s" % (ctx.path("prof2.txt"), d), "collapsed", d,
            ["not a regular file", "directory"])
    if os.listdir(d):
        pytest.fail("collapsed= wrote into the directory: %s" % os.listdir(d))


def test_files_heap_dump_0600(ctx):
    path = ctx.path("dump.hprof")
    run_umask(ctx, 0o022, "HeapShape", [], agent="heap=dump,format=b,file=" + path)
    if mode(path) != 0o600:
        pytest.fail("heap=dump,format=b file is %04o, expected 0600" % mode(path))
    with open(path, "rb") as f:
        if not f.read(19).startswith(b"JAVA PROFILE 1.0.2"):
            pytest.fail("%s is not an HPROF binary file" % path)
    old = ctx.path("old.hprof")
    with open(old, "w") as f:
        f.write("old\n")
    os.chmod(old, 0o644)
    run_umask(ctx, 0o022, "HeapShape", [], agent="heap=dump,format=b,force=y,file=" + old)
    if mode(old) != 0o600:
        pytest.fail("an overwritten 0644 file holding a heap dump is %04o, expected 0600" % mode(old))
    if os.path.getsize(old) < 1000:
        pytest.fail("the overwritten dump holds %d bytes" % os.path.getsize(old))


def test_files_mode_umask(ctx):
    path = ctx.path("cpu.txt")
    run_umask(ctx, 0o022, "Busy", ["300"], agent="cpu=samples,file=" + path)
    if mode(path) != 0o644:
        pytest.fail("cpu=samples file under umask 022 is %04o, expected 0644" % mode(path))
    path0 = ctx.path("cpu0.txt")
    pprof = ctx.path("cpu0.pb.gz")
    run_umask(ctx, 0, "Busy", ["300"], agent="cpu=samples,file=%s,pprof=%s" % (path0, pprof))
    got = {p: mode(p) for p in (path0, pprof)}
    bad = {os.path.basename(p): "%04o" % m for p, m in got.items() if m != 0o664}
    if bad:
        pytest.fail("under umask 0 expected 0664 (no o+w), got %s" % bad)
    left = [f for f in os.listdir(ctx.out) if ".tmp" in f]
    if left:
        pytest.fail("temporary files left: %s" % left)


def hprof(*args):
    return subprocess.run([HPROF] + list(args), capture_output=True, text=True, timeout=300)


def test_files_cli_outputs(ctx):
    cpu, dump = ctx.path("cpu.txt"), ctx.path("dump.hprof")
    ctx.run("Busy", ["300"], agent="cpu=samples,file=" + cpu)
    ctx.run("HeapShape", [], agent="heap=dump,format=b,file=" + dump)
    victim = ctx.path("victim.txt")
    with open(victim, "w") as f:
        f.write("unchanged\n")
    link = ctx.path("link.out")
    os.symlink(victim, link)
    for args in (["convert", cpu, "--to", "collapsed", "-o", link], ["report", cpu, "--html", "-o", link],
                 ["convert", cpu, "--to", "text", "-o", ctx.out]):
        r = hprof(*args)
        want = "symbolic link" if args[-1] == link else "not a regular file"
        if r.returncode == 0 or want not in r.stderr:
            pytest.fail("hprof %s: expected a refusal saying '%s', got rc %d: %s"
                        % (" ".join(args), want, r.returncode, r.stderr))
    if open(victim).read() != "unchanged\n" or not os.path.islink(link):
        pytest.fail("the file behind the link (or the link) was changed")
    got = {}
    for mask in (0o022, 0):
        old = os.umask(mask)
        try:
            for name, src, args in (("c.collapsed", cpu, ["--to", "collapsed"]),
                                    ("c.html", cpu, None), ("d.txt", dump, ["--to", "text"]),
                                    ("d.html", dump, None)):
                out = ctx.path("%s.%o" % (name, mask))
                r = hprof("report", src, "--html", "-o", out) if args is None \
                    else hprof("convert", src, *args, "-o", out)
                if r.returncode != 0:
                    pytest.fail("hprof on %s -o %s: rc %d: %s" % (src, out, r.returncode, r.stderr))
                got[os.path.basename(out)] = mode(out)
        finally:
            os.umask(old)
    want = {"c.collapsed.22": 0o644, "c.html.22": 0o644, "c.collapsed.0": 0o664, "c.html.0": 0o664,
            "d.txt.22": 0o600, "d.html.22": 0o600, "d.txt.0": 0o600, "d.html.0": 0o600}
    bad = {k: "%04o (want %04o)" % (got[k], v) for k, v in want.items() if got[k] != v}
    if bad:
        pytest.fail("modes of hprof's outputs: %s" % bad)
