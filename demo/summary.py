#!/usr/bin/env python3
"""Print the last CPU SAMPLES (or, with --times, CPU TIME) section of an
HPROF text file with the stack trace of each of its top rows, and the
samples per thread (thread=y files). A convenience for the demo; the full
report is the file itself."""
import re
import sys

TOP = 10

def main(path, times=False):
    text = open(path, encoding="utf-8", errors="replace").read()
    threads = dict(re.findall(r'^THREAD START \(obj=\w+, id = (\d+), name="([^"]*)"', text, re.M))
    traces, trace_thread = {}, {}
    for m in re.finditer(r'^TRACE (\d+):(?: \(thread=(\d+)\))?\n((?:\t.*\n)*)', text, re.M):
        traces[m.group(1)] = m.group(3).rstrip("\n").split("\n")
        trace_thread[m.group(1)] = m.group(2)
    title = "CPU TIME \\(ms\\)" if times else "CPU SAMPLES"
    sections = re.findall(r'^(%s BEGIN .*\n)(rank.*\n)((?:\s+\d+ .*\n)*)%s END' % (title, title), text, re.M)
    if not sections:
        sys.exit(f"{path}: no {title.replace(chr(92), '')} section")
    begin, header, rows = sections[-1]
    rows = rows.splitlines()
    print(begin + header + "\n".join(rows[:TOP]))
    if len(rows) > TOP:
        print(f"... {len(rows) - TOP} more rows in the file")
    print()
    for row in rows[:min(TOP, 5)]:
        trace = row.split()[4]
        print(f"TRACE {trace}:")
        print("\n".join(traces.get(trace, ["\t<missing>"])))
    if times:
        return
    per_thread = {}
    for row in rows:
        cols = row.split()
        t = trace_thread.get(cols[4])
        if t:
            per_thread[t] = per_thread.get(t, 0) + int(cols[3])
    if per_thread:
        print("\nsamples per thread (a thread is sampled only for CPU it uses: blocked, sleeping\n"
              "and waiting threads get none; a thread not listed used less than an interval):")
        for t, n in sorted(per_thread.items(), key=lambda kv: -kv[1]):
            print(f"  {n:7d}  {threads.get(t, '?')} (id {t})")

if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--times"]
    main(args[0] if args else "java.hprof.txt", times="--times" in sys.argv[1:])
