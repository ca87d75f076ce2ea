"""Class dumps a JVMPI agent asks for while it reads a heap dump (pytest tests,
run on each JDK with the ctx fixture of tests/conftest.py): tests/jvmpi/hprof_like.c
in build/libjvmpi.so on tests/java/JvmpiCalls.java (mode hprof).

    jvmpi_dump_class_dumps hprof_like.c reading a level 2 HEAP_DUMP asks, as HPROF
                         does, for the OBJECT_DUMP of each class it meets an
                         instance of (hundreds): each answered with that class's
                         CLASS_DUMP and the superclass the heap dump gives it.
                         Their cost (answered from the dump's own class table;
                         read again for each, they took 90 % of the dump's CPU)
                         is a benchmark figure, not asserted here:
                         bench/jvmpi/run's jvmpi-dump configuration
                         (docs/measurements.md).
"""

import re

from test_jvmpi_hprof_like import hprof_like


def test_jvmpi_dump_class_dumps(ctx, jvmpi_agents):
    """OBJECT_DUMPs of classes asked for while a HEAP_DUMP is read: each right."""
    _r, lines = hprof_like(ctx, ["dump", "off", "supers"])
    line = next((l for l in lines if l.startswith("class_dumps ")), None)
    m = re.match(r"^class_dumps (\d+) wrong (\d+) cpu ([\d.]+) of ([\d.]+)$", line or "")
    assert m, "expected a class_dumps line, found: %s" % lines[-4:]
    asked, wrong = int(m.group(1)), int(m.group(2))
    assert asked >= 100 and wrong == 0, \
        "expected hundreds of classes asked for, none answered wrong; found %d asked, %d wrong" % (asked, wrong)
    ctx.note("%d class dumps asked for during the heap dump, all right (%s s CPU of the dump's %s s)"
             % (asked, m.group(3), m.group(4)))
