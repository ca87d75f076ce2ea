"""The debugger agent the tests start beside ours (-agentlib:jdwp): its
option, shared by the coexistence, virtual-thread, JVMPI and ASan tests. A
module of its own, importing nothing of the tests, because tests/run.py and
the modules it registers import it while they load."""

# A debugger agent that listens on a free port and is never attached to.
JDWP_SERVER = "-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:0"
