"""The CPU time a running JVM's threads have used, read from /proc, so that
a test waits for the CPU a sampled thread has had rather than for wall-clock
time: on a loaded machine a second of wall time may hold a tenth of a
second of a thread's CPU, and as many CPU samples. Standard library only."""

import glob
import os
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def task_cpu_ns(task):
    """CPU time of one /proc/PID/task/TID directory (schedstat's run time
    in ns; stat's utime + stime where schedstat is missing)."""
    try:
        with open(os.path.join(task, "schedstat")) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    with open(os.path.join(task, "stat")) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000000000 // CLOCK_TICKS


def thread_cpu_s(pid, name):
    """CPU seconds used so far by the threads of process pid whose OS name
    is name (HotSpot names a Java thread's OS thread after it, cut to 15
    bytes; the launcher's main thread is "java", beside the primordial
    thread, also "java", which waits for it and uses next to no CPU)."""
    total = 0
    for task in glob.glob("/proc/%d/task/*" % pid):
        try:
            with open(os.path.join(task, "comm")) as f:
                if f.read().rstrip("\n") != name[:15]:
                    continue
            total += task_cpu_ns(task)
        except (OSError, ValueError, IndexError):
            continue                 # the thread ended meanwhile
    return total / 1e9


def wait_thread_cpu(p, name, seconds, limit_s=90):
    """Waits until the threads named name of the running process p (a
    Popen) have used `seconds` more CPU than when called, or p ended, or
    limit_s of wall time passed (a guard against a hang, not a judgement
    of speed). Returns the CPU seconds they used meanwhile."""
    start = thread_cpu_s(p.pid, name)
    deadline = time.monotonic() + limit_s
    used = 0.0
    while p.poll() is None and time.monotonic() < deadline:
        used = thread_cpu_s(p.pid, name) - start
        if used >= seconds:
            break
        time.sleep(0.05)
    return used
