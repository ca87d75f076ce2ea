# Dynamic-language runtime for bench/realapps: Jython 2.7 (Debian's jython) runs this
# Python program. Every Python generator Jython creates has a Java finalizer (PyGenerator
# is a FinalizableBuiltin: a FinalizeTrigger object with finalize()), so the program makes
# hundreds of thousands of finalizable objects, as real Jython code does, and the JVM's
# Finalizer thread must keep up with it.
# It checks its own result: the sums are computed twice, once through generators and once
# with plain loops, and must agree. Prints "generators N sum=S OK" or exits 1.
import sys

def evens(n):
    i = 0
    while i < n:
        yield i
        i += 2

def squares(seq):
    for x in seq:
        yield x * x

def words(text):
    for w in text.split():
        yield w.lower()

rounds = int(sys.argv[1])
text = "The quick brown Fox jumps over the lazy dog and the Cat " * 4
total = 0
counts = {}
for r in range(rounds):
    total += sum(squares(evens(r % 50)))
    for w in words(text):
        counts[w] = counts.get(w, 0) + 1
    total += sum(x for x in range(r % 7))

check = 0
for r in range(rounds):
    i = 0
    while i < r % 50:
        check += i * i
        i += 2
    check += sum(range(r % 7))
ok = total == check and counts["the"] == rounds * 12
print("generators %d sum=%d the=%d %s" % (rounds, total, counts["the"], "OK" if ok else "WRONG %d" % check))
if not ok:
    sys.exit(1)
