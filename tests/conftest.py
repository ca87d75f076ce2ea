"""pytest's view of the test suite (Debian's python3-pytest; `make test` runs it).

Fixtures: `built` (the agent, build/hprof and the JVMPI layer, made once by
`make`), `java_classes` (tests/java/*.java compiled once), `jvmpi_agents`
(the JVMPI test agents of tests/jvmpi/, made once), `jdk` (parametrized
by JDK: items test_<name>[jdk17] and [jdk25], skipped with the reason where that
JDK is absent), `ctx` (a run.Ctx: the JDK, an empty output directory
build/tests/out/<name>-<jdk>/ and the notes printed under the test's line) and
`nojdk_ctx` (the same for a test without a JVM: build/tests/out/<name>/).

Tests come from two places:
- test_*.py modules: plain pytest tests that ask for those fixtures and
  check with assert (run.py's helpers raise run.Fail and run.Skip, turned
  into pytest's failure and skip below);
- the C unit tests (TEST(name) in tests/unit/*.c), collected here as
  test_<name>[unit], [asan] and [tsan]: each binary runs once and each item
  reads its PASS or FAIL line; test_unit_tests[<kind>] checks the binary's own
  exit (a sanitizer's report at exit, a crash, a timeout).

Options: --jdk 17|25 (repeatable), --filter NAME (tests/run.py's filters: only
tests whose name contains NAME), --no-build, --ensure-tools (install the tools
our outputs are checked with first, as `make test` does). The session ends with
pytest's summary line, then the line the project's scripts read:
`N passed, N failed` (`, N skipped` if any; errors count as failed).
"""

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)
import run  # noqa: E402  (the JDKs, the paths and the runs' helpers)
import jvmpi_agents as jvmpi_agents_lib  # noqa: E402  (the JVMPI tests' agents)

JDK_NAMES = ("jdk17", "jdk25")
UNIT_BINARIES = (("unit", os.path.join(run.BUILD, "unit", "unit_tests")),
                 ("asan", os.path.join(run.BUILD, "asan", "unit_tests")),
                 ("tsan", os.path.join(run.BUILD, "tsan", "unit_tests")))
UNIT_OUT = os.path.join(run.OUT, "unit")


def pytest_addoption(parser):
    group = parser.getgroup("hprof")
    group.addoption("--jdk", action="append", choices=["17", "25"],
                    help="run the JVM tests only on this JDK (repeatable)")
    group.addoption("--filter", action="append", default=[], metavar="NAME",
                    help="only tests whose name contains NAME (repeatable; tests/run.py's filters)")
    group.addoption("--no-build", action="store_true",
                    help="skip `make` and `make unit` (use the existing build/)")
    group.addoption("--ensure-tools", action="store_true",
                    help="first install the tools our outputs are checked with (scripts/ensure-test-tools)")


def pytest_sessionstart(session):
    config = session.config
    os.makedirs(run.OUT, exist_ok=True)
    if config.getoption("ensure_tools"):
        log = os.path.join(run.OUT, "ensure-test-tools.log")
        if run.sh([os.path.join(run.ROOT, "scripts", "ensure-test-tools")], log, timeout=1800) != 0:
            # The checks that need a missing tool SKIP with the reason.
            print("\nnote: scripts/ensure-test-tools could not install every tool (see %s); "
                  "the checks that need them will SKIP" % log, flush=True)


# ---------------------------------------------------------------- fixtures

class Jdk:
    def __init__(self, name, home):
        self.name, self.home = name, home
        self.java = os.path.join(home, "bin", "java")


def pytest_generate_tests(metafunc):
    if "jdk" in metafunc.fixturenames:
        wanted = metafunc.config.getoption("jdk")
        names = [n for n in JDK_NAMES if not wanted or n[3:] in wanted]
        metafunc.parametrize("jdk", names, indirect=True)


@pytest.fixture(scope="session")
def jdk_homes():
    return dict(run.jdks())


@pytest.fixture
def jdk(request, jdk_homes):
    home = jdk_homes.get(request.param)
    if home is None:
        pytest.skip("%s is not installed (no /usr/lib/jvm/*%s* with bin/java)" % (request.param, request.param[3:]))
    return Jdk(request.param, home)


@pytest.fixture(scope="session")
def built(request):
    """`make` (the agent, build/hprof, the JVMPI layer) once; the agent's path."""
    if not request.config.getoption("no_build"):
        log = os.path.join(run.BUILD, "tests", "make.log")
        os.makedirs(os.path.dirname(log), exist_ok=True)
        if run.sh(["make", "-C", run.ROOT], log) != 0:
            pytest.fail("make failed, see %s: %s" % (log, run.tail(run.read(log), 2)), pytrace=False)
    if not os.path.isfile(run.AGENT):
        pytest.fail("%s missing (build failed?)" % run.AGENT, pytrace=False)
    return run.AGENT


@pytest.fixture(scope="session")
def java_classes(jdk_homes):
    """tests/java/*.java compiled (--release 17) into build/tests/classes."""
    err = run.compile_java(list(jdk_homes.items()))
    if err:
        pytest.fail(err, pytrace=False)
    return run.CLASSES


@pytest.fixture(scope="session")
def jvmpi_agents(request):
    """The JVMPI layer, the agents of tests/jvmpi/*.c and the header check
    (`make build/libjvmpi.so jvmpi-test-agents`) built once, unless
    --no-build; the agents' directory (jvmpi_agents.agent(name) names one)."""
    if not request.config.getoption("no_build"):
        log = os.path.join(run.BUILD, "tests", "jvmpi-make.log")
        os.makedirs(os.path.dirname(log), exist_ok=True)
        if run.sh(["make", "-C", run.ROOT] + jvmpi_agents_lib.MAKE_TARGETS, log) != 0:
            pytest.fail("make jvmpi-test-agents failed, see %s: %s" % (log, run.tail(run.read(log), 2)), pytrace=False)
    missing = [p for p in (jvmpi_agents_lib.LAYER, jvmpi_agents_lib.HEADER_CHECK) if not os.path.isfile(p)]
    if missing:
        pytest.fail("%s missing: run make jvmpi-test-agents" % ", ".join(missing), pytrace=False)
    return jvmpi_agents_lib.AGENTS


def short_name(item):
    """A test's name without test_ and its JDK, as --filter, tests/run.py
    and the output directories know it: test_cpu_split[jdk17] -> cpu_split,
    test_bad_option[jdk17-foo=bar] -> bad_option[foo=bar]."""
    name = getattr(item, "originalname", None) or item.name
    name = name[5:] if name.startswith("test_") else name
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        ids = callspec.id
        for jdk_name in JDK_NAMES:
            if ids == jdk_name or ids.startswith(jdk_name + "-"):
                ids = ids[len(jdk_name) + 1:]
        if ids:
            name += "[%s]" % ids
    return name


@pytest.fixture
def ctx(request, jdk, built, java_classes):
    """A run.Ctx for this test on this JDK, its output directory emptied."""
    name = short_name(request.node)
    out = os.path.join(run.OUT, "%s-%s" % (re.sub(r"[^\w.=-]", "_", name), jdk.name))
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    c = run.Ctx(name, jdk.name, jdk.home, out)
    request.node.hprof_ctx = c
    return c


@pytest.fixture
def nojdk_ctx(request):
    """A run.Ctx for a test without a JVM: no JDK, its output directory
    build/tests/out/<name>/ emptied, its notes printed under its line."""
    name = short_name(request.node)
    out = os.path.join(run.OUT, re.sub(r"[^\w.=-]", "_", name))
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    c = run.Ctx(name, None, None, out)
    request.node.hprof_ctx = c
    return c


# ---------------------------------------------------------------- running

@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Calls the test as pytest does, turning run.Fail and run.Skip (raised
    by the shared helpers: run.py, monitor_checks.py, bci/bcitests.py, ...)
    into pytest's failure and skip, with the message alone (it says what
    went wrong)."""
    args = {a: pyfuncitem.funcargs[a] for a in pyfuncitem._fixtureinfo.argnames}
    failed = skipped = None
    try:
        pyfuncitem.obj(**args)
    except run.Fail as e:
        failed = str(e)
    except run.Skip as e:
        skipped = str(e)
    # Outside the handler, so that pytest shows the message, not a chain.
    if failed is not None:
        pytest.fail(failed, pytrace=False)
    if skipped is not None:
        pytest.skip(skipped)
    return True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    c = getattr(item, "hprof_ctx", None)
    if c is None or call.when != "call":
        return
    notes = list(c.notes)
    if report.passed:
        notes.append("(%.1f s)" % call.duration)
    elif report.failed:
        notes.append("output: %s/ (%s)" % (c.out, ", ".join(sorted(os.listdir(c.out)))))
    if notes:
        report.sections.append(("notes", "\n".join(notes)))


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    """The notes under the test's line, as tests/run.py printed them."""
    if report.when != "call" or report.skipped:
        return
    notes = [text for title, text in report.sections if title == "notes"]
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        reason = crash.message if crash is not None else str(report.longrepr)
        notes.insert(0, "failed: " + reason)
    if not notes:
        return
    print("", flush=True)
    for line in "\n".join(notes).splitlines():
        print("    " + line, flush=True)


def item_order(item):
    """Tests without a JDK, then the C unit tests, then the JVM tests: all of
    JDK 17's, then JDK 25's, in their order of collection."""
    if isinstance(item, (UnitTest, UnitBinary)):
        return (1, 0)
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "jdk" in callspec.params:
        return (2, JDK_NAMES.index(callspec.params["jdk"]))
    return (0, 0)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    filters = config.getoption("filter")
    if filters:
        kept = [i for i in items if any(f in short_name(i) for f in filters)]
        dropped = [i for i in items if not any(f in short_name(i) for f in filters)]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    items.sort(key=item_order)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    """After pytest's own summary line, the closing line tests/run.py wrote."""
    yield
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or session.config.option.collectonly:
        return
    stats = reporter.stats
    passed = len(stats.get("passed", []))
    failed = len(stats.get("failed", [])) + len(stats.get("error", []))
    skipped = len(stats.get("skipped", []))
    line = "%d passed, %d failed" % (passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    reporter.write_line(line)


# ---------------------------------------------------------------- C unit tests

class UnitFailure(Exception):
    pass


class UnitRun:
    """One run of a unit-test binary: each test's PASS/FAIL line."""

    def __init__(self, kind, binary):
        self.kind, self.binary = kind, binary
        self.out = os.path.join(UNIT_OUT, kind + ".out")
        self.status, self.rc, self.text, self.error = {}, None, "", None


_unit_runs = {}
_unit_made = []


def unit_run(config, kind):
    if kind in _unit_runs:
        return _unit_runs[kind]
    os.makedirs(UNIT_OUT, exist_ok=True)
    binary = dict(UNIT_BINARIES)[kind]
    r = _unit_runs[kind] = UnitRun(kind, binary)
    if not config.getoption("no_build") and not _unit_made:
        log = os.path.join(UNIT_OUT, "make-unit.log")
        rc = run.sh(["make", "-C", run.ROOT, "unit"], log)
        _unit_made.append((rc, log))
    if _unit_made and _unit_made[0][0] != 0:
        rc, log = _unit_made[0]
        r.error = "make unit failed (rc %d), see %s: %s" % (rc, log, run.tail(run.read(log), 2))
        return r
    if not os.path.isfile(binary):
        r.error = "%s not built by make unit" % binary
        return r
    # ThreadSanitizer cannot start under some kernels' address-space
    # randomization ("unexpected memory mapping"): then again without it.
    for argv in ([binary], ["setarch", os.uname().machine, "-R", binary]):
        with open(r.out, "wb") as f:
            try:
                r.rc = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, timeout=300, cwd=run.ROOT,
                                      stdin=subprocess.DEVNULL).returncode
            except subprocess.TimeoutExpired:
                r.rc = None
        r.text = run.read(r.out)
        if kind != "tsan" or "unexpected memory mapping" not in r.text:
            break
    for line in r.text.splitlines():
        m = re.match(r"^(PASS|FAIL) (\S+)(?:: (.*))?$", line)
        if m and r.status.get(m.group(2), ("PASS",))[0] == "PASS":
            r.status[m.group(2)] = (m.group(1), m.group(3) or "failed")
    return r


def unit_test_names():
    names = []
    for src in sorted(glob.glob(os.path.join(TESTS_DIR, "unit", "*.c"))):
        for n in re.findall(r"^TEST\((\w+)\)", run.read(src), re.M):
            if n not in names:
                names.append(n)
    return names


class UnitItem(pytest.Item):
    def __init__(self, *, kind, **kw):
        super().__init__(**kw)
        self.kind = kind

    def repr_failure(self, excinfo):
        if excinfo.errisinstance(UnitFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, self.name


class UnitTest(UnitItem):
    """One TEST() of tests/unit in one binary: its line of that binary's run."""

    def __init__(self, *, test, **kw):
        super().__init__(**kw)
        self.test = test

    def runtest(self):
        r = unit_run(self.config, self.kind)
        if r.error:
            raise UnitFailure(r.error)
        status, msg = r.status.get(self.test, (None, None))
        if status == "FAIL":
            raise UnitFailure("%s (see %s)" % (msg, r.out))
        if status is None:
            raise UnitFailure("%s did not run it (exit %s), see %s: %s"
                              % (os.path.relpath(r.binary, run.ROOT), r.rc, r.out, run.tail(r.text, 3)))


class UnitBinary(UnitItem):
    """The binary's own end: what no single test's line says."""

    def runtest(self):
        r = unit_run(self.config, self.kind)
        if r.error:
            raise UnitFailure(r.error)
        if r.rc is None:
            raise UnitFailure("timeout, see " + r.out)
        if r.rc != 0 and all(s == "PASS" for s, _ in r.status.values()):
            raise UnitFailure("exit code %d without a FAIL line, see %s: %s" % (r.rc, r.out, run.tail(r.text, 3)))
        if r.rc == 0 and not r.status:
            raise UnitFailure("ran no test, see " + r.out)


class UnitFile(pytest.File):
    def collect(self):
        names = unit_test_names()
        for kind, _ in UNIT_BINARIES:
            for n in names:
                yield UnitTest.from_parent(self, name="test_%s[%s]" % (n, kind), kind=kind, test=n)
            yield UnitBinary.from_parent(self, name="test_unit_tests[%s]" % kind, kind=kind)


def pytest_collect_file(file_path, parent):
    if file_path.name == "unit_main.c" and file_path.parent.name == "unit":
        return UnitFile.from_parent(parent, path=file_path)
    return None
