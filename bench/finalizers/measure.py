#!/usr/bin/env python3
"""One run of a Java program (tests/java/Finalizers unless `main` says
otherwise; bench/vthreads uses it too) under a given agent option string: the
child's CPU time and peak RSS (os.wait4's rusage), and CPU time per JVM
thread (last /proc/<pid>/task/*/stat seen, sampled every 50 ms), by name."""
import os, subprocess, sys, time, json

def thread_cpu(pid, acc):
    tck = os.sysconf("SC_CLK_TCK")
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return
    for t in tids:
        try:
            s = open("/proc/%d/task/%s/stat" % (pid, t)).read()
        except OSError:
            continue
        name = s[s.index("(") + 1:s.rindex(")")]
        f = s[s.rindex(")") + 2:].split()
        acc[t] = (name, (int(f[11]) + int(f[12])) / tck)

def run(java, classes, agent_path, opts, args, xmx="64m", main="Finalizers"):
    cmd = [java, "-Xmx" + xmx]
    if opts is not None:
        cmd.append("-agentpath:%s=%s" % (agent_path, opts))
    cmd += ["-cp", classes, main] + [str(a) for a in args]
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    acc = {}
    import threading
    err, out = [], []
    th = threading.Thread(target=lambda: err.append(p.stderr.read().decode(errors="replace")))
    th.start()
    th_out = threading.Thread(target=lambda: out.append(p.stdout.read().decode(errors="replace")))
    th_out.start()
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        thread_cpu(p.pid, acc)
        time.sleep(0.05)
    th.join()
    th_out.join()
    wall = time.time() - t0
    by_name = {}
    for name, cpu in acc.values():
        k = "GC/JIT/VM" if name.startswith(("GC ", "G1 ", "C1 ", "C2 ", "VM ", "GC Thread")) else name
        by_name[k] = by_name.get(k, 0) + cpu
    return {"rc": os.waitstatus_to_exitcode(status), "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024,
            "wall": wall, "threads": by_name, "stderr": err[0] if err else "", "stdout": out[0] if out else ""}

if __name__ == "__main__":
    java, classes, agent, opts = sys.argv[1:5]
    args = sys.argv[5:]
    r = run(java, classes, agent, None if opts == "-" else opts, args)
    print(json.dumps(r, indent=1))
