"""A JVMPI heap dump names no id it does not describe (issue 34: "HEAP DUMP
a and b complete and valid with every class defined before it is named").

    jvmpi_dump_complete  tests/java/JvmpiUnlinked.java under build/libjvmpi.so
                 with tests/jvmpi/dump_checker.c, which learns the classes
                 from CLASS_LOAD, asks for a level-2 HEAP_DUMP at
                 JVM_SHUT_DOWN and follows every id in it (roots, class
                 references, constant-pool entries, statics, instance fields,
                 array elements): none leads outside the dump, every record's
                 class had its CLASS_LOAD, and the static that holds the
                 Class object of a class loaded but never linked
                 (Class.forName(name, false, loader)) leads to that class.
                 Before the layer linked such classes and described the
                 Class objects class data sharing maps into the heap before
                 their classes load: 1,109 of 59,974 references led nowhere
                 (JDK 17; 1,197 on 25), and the static led to no class.
    jvmpi_dump_complete_off  the same with every event disabled before the
                 dump, as HPROF does at its end: the classes never linked
                 get no CLASS_LOAD then, and their Class objects are
                 INSTANCE_DUMPs of java/lang/Class; still no id leads nowhere
                 and no record's class lacks its CLASS_LOAD.
"""

import os
import re

import run

LAYER = os.path.join(run.BUILD, "libjvmpi.so")
AGENT = "libdump_checker.so"


def checked_dump(ctx, agents, options=""):
    """Runs JvmpiUnlinked under the layer and dump_checker: its output text."""
    out = ctx.path("checker.txt")
    spec = "%s=out=%s,holder=JvmpiUnlinked,static=held%s" % (os.path.join(agents, AGENT), out, options)
    r = ctx.run("JvmpiUnlinked", agent=spec,
                agent_path=LAYER)
    assert "unlinked JvmpiUnlinked$Lazy" in r.stdout, "the program did not run to its end: %r" % r.stdout[-300:]
    assert os.path.isfile(out), "dump_checker wrote no %s; stderr: %s" % (out, r.stderr[-500:])
    text = open(out).read()
    m = re.search(r"^dump (\w+) records (\d+) references (\d+) dangling (\d+) unknown_class (\d+) bad (\d+)$",
                  text, re.M)
    assert m, "no dump line in %s:\n%s" % (out, text)
    result, records, references, dangling, unknown, bad = m.group(1), *map(int, m.groups()[1:])
    ctx.note("%d records, %d references" % (records, references))
    assert result == "SUCCESS", "HEAP_DUMP failed:\n%s" % text
    assert records > 5000 and references > records, "a dump too small to be the heap's: %s" % m.group(0)
    assert bad == 0, "records dump_checker could not read:\n%s" % text
    assert unknown == 0, "records of classes the agent had no CLASS_LOAD of:\n%s" % text
    assert dangling == 0, "ids the dump names and does not describe:\n%s" % text
    assert "jvmpi:" not in r.stderr, "the layer wrote between the agent's lines: %s" % r.stderr[-500:]
    return text


def test_jvmpi_dump_complete(ctx, jvmpi_agents):
    text = checked_dump(ctx, jvmpi_agents)
    held = re.search(r"^held (\S+)$", text, re.M)
    assert held and held.group(1) == "JvmpiUnlinked$Lazy", \
        "JvmpiUnlinked.held should lead to the class JvmpiUnlinked$Lazy (loaded, never linked):\n%s" % text


def test_jvmpi_dump_complete_off(ctx, jvmpi_agents):
    checked_dump(ctx, jvmpi_agents, ",off")
