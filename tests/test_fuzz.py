"""The bounded fuzz runs of `make test` (tests/fuzz, README "Reliability").

One test per fuzz target, test_fuzz_<target>: the target built with gcc,
ASan/UBSan and the standalone driver (make build/fuzz/fuzz_<target>), run on
its seeds (tests/fuzz/corpus/<target>; bci: class files compiled by make),
its regression inputs (tests/fuzz/regress/<target>: inputs that once crashed,
replayed unmutated first) and a fixed number of mutated inputs from a fixed
seed, so a failure repeats exactly. Any sanitizer report, contract
violation (abort) or 10 s hang fails the test; the crashing input is saved
in the test's output directory build/tests/out/fuzz_<target>/ and the failure
names it. `make fuzz` runs the same targets for longer (FUZZ_TIME seconds each).
"""

import os
import re

import pytest

from run import BUILD, ROOT, read, sh, tail

# target, mutated inputs, worker processes: about 5-20 s each on one core (jvm_dump
# runs three functions over each input, the last appending it as our records: 20,000
# in 7.5 s since it reads through a buffer; 4,000 took 306 s in CI before).
RUNS = [("bci", 6000, 2), ("options", 200000, 1), ("attach", 200000, 1), ("net", 100000, 1),
        ("text_reader", 50000, 1), ("binary_reader", 30000, 1), ("jfr_reader", 30000, 1), ("elf", 1000000, 1),
        ("heap", 30000, 1), ("heap_text", 20000, 1), ("jvm_dump", 20000, 1), ("patch_traces", 100000, 1)]
SEED = 1
# A cap against a machine so loaded that the run would take forever; a run
# cut by it still passes (fewer inputs, said in the note).
TIME_CAP = 300


def fuzz(ctx, target, iterations, jobs):
    """Builds fuzz_<target> and runs it on its seeds, its regression inputs
    and `iterations` mutated inputs over `jobs` processes."""
    deps = ["build/fuzz/fuzz_" + target] + (["build/fuzz/seeds/.ok"] if target == "bci" else [])
    log = ctx.path("make.log")
    if sh(["make", "-C", ROOT] + deps, log, 900) != 0:
        pytest.fail("make %s failed, see %s: %s" % (" ".join(deps), log, tail(read(log), 3)))
    if target == "bci":
        seeds = [os.path.join(BUILD, "fuzz", "seeds")]
    else:
        seeds = [os.path.join(ROOT, "tests", "fuzz", "corpus", target)]
    regress = os.path.join(ROOT, "tests", "fuzz", "regress", target)
    if os.path.isdir(regress):
        seeds.append(regress)
    log = ctx.path("run.log")
    cmd = [os.path.join(BUILD, "fuzz", "fuzz_" + target), "-n", str(iterations), "-s", str(SEED),
           "-j", str(jobs), "-t", str(TIME_CAP), "-o", ctx.out] + seeds
    rc = sh(cmd, log, TIME_CAP + 120)
    text = read(log)
    if rc != 0:
        saved = re.findall(r"crashing input (?:saved to|is the seed file) (\S+)", text)
        what = [l for l in text.splitlines() if "runtime error" in l or "ERROR: AddressSanitizer" in l
                or "contract violated" in l or "longer than 10 s" in l]
        pytest.fail("fuzz_%s: expected exit 0, got %d; %s; input: %s (log %s)" % (
            target, rc, what[0] if what else tail(text, 3), ", ".join(saved) or "?", log))
    done = sum(int(n) for n in re.findall(r": (\d+) mutated inputs", text))
    m = re.search(r"passed in ([\d.]+) s", text)
    assert m and done > 0, "fuzz_%s: expected 'N mutated inputs ... passed in S s', found none in %s: %s" % (
        target, log, tail(text, 3))
    # The figures README "Reliability" quotes.
    ctx.note("fuzz_%s: %d mutated inputs in %s s, %s" % (
        target, done, m.group(1), "; ".join(re.findall(r"mutated inputs[^;]*; (.*)", text))))


def fuzz_test(target, iterations, jobs):
    def test(nojdk_ctx):
        fuzz(nojdk_ctx, target, iterations, jobs)
    test.__name__ = test.__qualname__ = "test_fuzz_" + target
    test.__doc__ = "fuzz_%s: %d mutated inputs over %d process(es)" % (target, iterations, jobs)
    return test


# One test per target, test_fuzz_<target>: a new target is one entry here.
for _target, _iterations, _jobs in RUNS:
    globals()["test_fuzz_" + _target] = fuzz_test(_target, _iterations, _jobs)
