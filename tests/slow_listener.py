"""A listener that takes net='s data slowly, and CpuSplit driven through
SIGQUIT heap dumps while one is connected: shared by tests/test_net.py
(net_slow_listener: what the agent does) and bench/net --slow-listener (what
it costs the program's own work). Standard library only."""

import os
import signal
import socket
import threading
import time

MAX_DUMPS = 10


class SlowListener:
    """Greets the agent, then takes 2 KiB a second (small receive buffer)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.received, self.stop = 0, False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        try:
            conn, _ = self.sock.accept()
        except OSError:          # closed before anyone connected
            return
        conn.sendall(b"HPROF-LISTEN 1\n")
        while not self.stop:
            data = conn.recv(2048)
            if not data:
                break
            self.received += len(data)
            time.sleep(1)
        conn.close()

    def close(self):
        self.stop = True
        self.sock.close()


def drive_dumps(p, stderr_path, dumps, grow=None, limit_s=120):
    """CpuSplit running as p (its stderr in stderr_path) gets `dumps`
    SIGQUITs a second apart; grow=(path, size): more (up to MAX_DUMPS in
    all) until the file at path is that large, each once the last dump is
    done, as how large each dump is depends on the machine's speed. Then
    waits for the JVM's exit (at most limit_s from the start). Returns (the
    SIGQUITs sent, seconds until CpuSplit's TRUTH line, i.e. its own work
    done, or None, seconds until the JVM's exit or None)."""
    def stderr():
        with open(stderr_path, errors="replace") as f:
            return f.read()

    t0 = time.monotonic()
    sent = 0
    while p.poll() is None and (sent < dumps or (grow and sent < MAX_DUMPS and os.path.exists(grow[0]) and
                                                 os.path.getsize(grow[0]) < grow[1])):
        time.sleep(1.0)
        p.send_signal(signal.SIGQUIT)
        sent += 1
        if grow:
            deadline = time.monotonic() + 30
            while p.poll() is None and time.monotonic() < deadline and \
                    stderr().count("(SIGQUIT) ... done.") < sent:
                time.sleep(0.05)
    truth_at = None
    while p.poll() is None and time.monotonic() - t0 < limit_s:
        if truth_at is None and "TRUTH" in stderr():
            truth_at = time.monotonic() - t0
        time.sleep(0.05)
    if truth_at is None and "TRUTH" in stderr():
        truth_at = time.monotonic() - t0
    exited = time.monotonic() - t0 if p.poll() is not None else None
    return sent, truth_at, exited
