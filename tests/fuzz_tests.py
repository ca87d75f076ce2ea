"""The bounded fuzz runs of `make test` (tests/fuzz, README "Reliability").

One test per fuzz target, fuzz_<target>: the target built with gcc,
ASan/UBSan and the standalone driver (make build/fuzz/fuzz_<target>), run on
its seeds (tests/fuzz/corpus/<target>; bci: class files compiled by make),
its regression inputs (tests/fuzz/regress/<target>: inputs that once crashed,
replayed unmutated first) and a fixed number of mutated inputs from a fixed
seed, so a failure repeats exactly. Any sanitizer report, contract
violation (abort) or 10 s hang fails the test; the crashing input is saved
under build/tests/fuzz/<target>/ and the failure names it. `make fuzz` runs
the same targets for longer (FUZZ_TIME seconds each).
"""

import os
import re

# target, mutated inputs, worker processes: about 5-20 s each on one core.
RUNS = [("bci", 6000, 2), ("options", 200000, 1), ("attach", 200000, 1), ("net", 100000, 1),
        ("text_reader", 50000, 1), ("binary_reader", 30000, 1), ("jfr_reader", 30000, 1), ("elf", 1000000, 1),
        ("heap", 30000, 1), ("jvm_dump", 20000, 1), ("patch_traces", 100000, 1)]
SEED = 1
# A cap against a machine so loaded that the run would take forever; a run
# cut by it still passes (fewer inputs, said in the note).
TIME_CAP = 300


def make_tests(Fail, root, sh, read, tail):
    build = os.path.join(root, "build")

    def make_test(target, iterations, jobs):
        def t(ctx):
            out = os.path.join(build, "tests", "fuzz", target)
            os.makedirs(out, exist_ok=True)
            log = os.path.join(out, "make.log")
            deps = ["build/fuzz/fuzz_" + target] + (["build/fuzz/seeds/.ok"] if target == "bci" else [])
            if sh(["make", "-C", root] + deps, log, 900) != 0:
                raise Fail("make %s failed, see %s: %s" % (" ".join(deps), log, tail(read(log), 3)))
            if target == "bci":
                seeds = [os.path.join(build, "fuzz", "seeds")]
            else:
                seeds = [os.path.join(root, "tests", "fuzz", "corpus", target)]
            regress = os.path.join(root, "tests", "fuzz", "regress", target)
            if os.path.isdir(regress):
                seeds.append(regress)
            log = os.path.join(out, "run.log")
            cmd = [os.path.join(build, "fuzz", "fuzz_" + target), "-n", str(iterations), "-s", str(SEED),
                   "-j", str(jobs), "-t", str(TIME_CAP), "-o", out] + seeds
            rc = sh(cmd, log, TIME_CAP + 120)
            text = read(log)
            if rc != 0:
                saved = re.findall(r"crashing input (?:saved to|is the seed file) (\S+)", text)
                what = [l for l in text.splitlines() if "runtime error" in l or "ERROR: AddressSanitizer" in l
                        or "contract violated" in l or "longer than 10 s" in l]
                raise Fail("fuzz_%s: rc %d; %s; input: %s (log %s)" % (
                    target, rc, what[0] if what else tail(text, 3), ", ".join(saved) or "?", log))
            done = sum(int(n) for n in re.findall(r": (\d+) mutated inputs", text))
            m = re.search(r"passed in ([\d.]+) s", text)
            if not m or done == 0:
                raise Fail("fuzz_%s printed no result, see %s: %s" % (target, log, tail(text, 3)))
            # (Tests without a JVM have no ctx to note on: said here, the
            # figures README "Reliability" quotes.)
            print("note: fuzz_%s: %d mutated inputs in %s s, %s" % (
                target, done, m.group(1), "; ".join(re.findall(r"mutated inputs[^;]*; (.*)", text))), flush=True)
        return t

    return [("fuzz_" + target, make_test(target, n, j)) for target, n, j in RUNS]
