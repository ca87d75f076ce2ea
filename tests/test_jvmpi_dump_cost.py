"""What a JVMPI agent's heap dump costs through the layer (pytest tests, run on
each JDK with the ctx fixture of tests/conftest.py): tests/jvmpi/hprof_like.c
in build/libjvmpi.so on tests/java/JvmpiCalls.java (mode hprof).

    jvmpi_dump_class_dumps hprof_like.c reading a level 2 HEAP_DUMP asks, as HPROF
                         does, for the OBJECT_DUMP of each class it meets an
                         instance of (hundreds): each answered with that class's
                         CLASS_DUMP and the superclass the heap dump gives it,
                         all of them together in less than a quarter of the
                         CPU time of the whole RequestEvent(HEAP_DUMP) they are
                         made in (from the dump's own class table: read again
                         for each, they took 90 % of it)
"""

import re

from test_jvmpi_hprof_like import first_match, hprof_like


def test_jvmpi_dump_class_dumps(ctx, jvmpi_agents):
    """OBJECT_DUMPs of classes asked for while a HEAP_DUMP is read: right, and cheap."""
    _r, lines = hprof_like(ctx, ["dump", "off", "supers"])
    line = next((l for l in lines if l.startswith("class_dumps ")), None)
    m = re.match(r"^class_dumps (\d+) wrong (\d+) cpu ([\d.]+) of ([\d.]+)$", line or "")
    assert m, "expected a class_dumps line, found: %s" % lines[-4:]
    print(line)
    asked, wrong = int(m.group(1)), int(m.group(2))
    cpu, dump_cpu = float(m.group(3)), float(m.group(4))
    assert asked >= 100 and wrong == 0, \
        "expected hundreds of classes asked for, none answered wrong; found %d asked, %d wrong" % (asked, wrong)
    assert cpu <= dump_cpu / 4, \
        "expected the %d OBJECT_DUMPs of classes to take under a quarter of the heap dump's %.3f s CPU, " \
        "found %.3f s" % (asked, dump_cpu, cpu)
