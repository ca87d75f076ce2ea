"""The tests registered in tests/run.py's lists, as pytest tests: each
(name, fn) of JVM_TESTS becomes test_<name>, run on each JDK with the `ctx`
fixture (test_cpu_split[jdk17], test_cpu_split[jdk25]); each of NOJDK_TESTS
becomes test_<name>, run once with no context. Modules that still register
through make_tests(Fail, Skip, ...) are collected this way unchanged; a module
converted to plain pytest tests (test_*.py) leaves these lists."""

import run


def _jvm_test(fn):
    def test(ctx):
        fn(ctx)
    test.__doc__ = fn.__doc__
    return test


def _nojdk_test(fn):
    def test():
        fn(None)
    test.__doc__ = fn.__doc__
    return test


def _register(tests, wrap):
    for name, fn in tests:
        key = "test_" + name
        if key in globals():
            raise RuntimeError("tests/run.py registers two tests named %s" % name)
        globals()[key] = wrap(fn)


_register(run.JVM_TESTS, _jvm_test)
_register(run.NOJDK_TESTS, _nojdk_test)
