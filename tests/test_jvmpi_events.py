"""The JVMPI layer's events (pytest tests, run on each JDK with the ctx
fixture of tests/conftest.py; jvmpi_header without a JVM): agents written to
the JVMPI specification alone (tests/jvmpi/*.c, the jvmpi_agents fixture),
loaded by build/libjvmpi.so into real JVMs, on tests/java/JvmpiCalls.java,
whose calls, classes, threads, objects and heap are known exactly. Each agent
writes what it saw as lines of its own (tests/jvmpi_agents.py).

    jvmpi_header         tests/jvmpi/header_check.c names every type, constant,
                         structure member and function pointer of jvmpi.h
                         (-pedantic -Werror): event numbers distinct and in
                         range, old aliases equal to the new names, the
                         interface's functions in the specification's order
    jvmpi_method_counter the specification's own example (a per-thread method
                         counter in JVMPI thread-local storage): exact entries
                         and exits per thread for JvmpiCalls' methods (a 1000,
                         thrower 10 with 10 exits by exception, worker-i's work
                         (i+1)*100 and leaf 2(i+1)*100), GetCallTrace with
                         line numbers (leaf's line, then work's call line)
    jvmpi_entry2         METHOD_ENTRY2 with METHOD_ENTRY/EXIT on JvmpiCalls$Point:
                         the receiver's id for its 2 constructor calls, 2 norm()
                         and 1 compareTo() calls, NULL for its static <clinit>
    jvmpi_classes_threads CLASS_LOAD with methods, statics, instance fields,
                         source and interfaces exactly as JvmpiCalls$Point
                         declares them; java/lang/Object (loaded before the
                         agent) announced once, no class twice; RequestEvent
                         (CLASS_LOAD) answered synchronously with
                         JVMPI_REQUESTED_EVENT; THREAD_START (group) and
                         THREAD_END once each for t-0..t-2, main announced
                         before JVM_INIT_DONE; GC_START/GC_FINISH paired, a raw
                         monitor held across them
    jvmpi_alloc          OBJECT_ALLOC (by its old name, OBJ_ALLOC) exactly as
                         JvmpiCalls makes them: 1151 Blob instances (new,
                         reflection, clone()) each with its own id and one
                         size, 261 arrays of Blob (new, an initialized array,
                         multianewarray's inner arrays, Array.newInstance), the
                         10 Blob[][] naming Blob[] as element class, whose
                         CLASS_LOAD ("[LJvmpiCalls$Blob;") came before, 300 int[12347] of
                         16 + 4 * 12347 bytes rounded to 8; one arena (1,
                         announced by ARENA_NEW); after a GC, RequestEvent
                         (OBJECT_ALLOC) of the first Blob gives the same id and
                         class (ids never move), and of Blob's class object a
                         java/lang/Class instance, synchronously; OBJECT_DUMP of
                         the first Blob (INSTANCE_DUMP: class id, u4 length,
                         int 7 and long 0x0102030405060708 big-endian, its own
                         id) and of the array { it, null } (OBJ_ARRAY_DUMP);
                         of Blob's class object (CLASS_DUMP: its id, a
                         super, instance size 12 + an id, its one interface,
                         constant pool entries of references, no statics)
    jvmpi_hook_refs      CLASS_LOAD_HOOK: every class's bytes (0xCAFEBABE), one
                         rewritten by the agent (a string literal replaced, in
                         a buffer from malloc_f) runs rewritten, and stays so
                         when the layer instruments the loaded classes for
                         METHOD_ENTRY enabled later (text() entered once); JNI
                         global and weak global references the agent makes and
                         deletes: ALLOC with the reference and the object's id,
                         FREE with the reference
    jvmpi_compiled       COMPILED_METHOD_LOAD of a method the JIT compiles
                         (hot(), 300,000 calls): at least one, each with an
                         address and a size, and a line table whose every entry
                         is inside the code and within the method's lines
    jvmpi_free           OBJECT_FREE for exactly the 500 of 1000 Blobs the program
                         dropped, each between GC_START and GC_FINISH on their
                         thread (the agent holds its lock across, as the
                         specification asks); GC_FINISH's heap statistics
                         (objects, bytes used, total) present and consistent;
                         CLASS_UNLOAD of JvmpiCalls$Gone, loaded by a class
                         loader the program drops; RunGC's events before it
                         returns; then a HEAP_DUMP at level 0 (records of u1
                         kind and a native-pointer id) holding exactly the 500
                         kept Blobs as normal objects and none of the freed
                         ones; level 2 answered JVMPI_SUCCESS; then each of the
                         1000 ids looked up, before and after a RunGC (the
                         objects move): the 500 kept ones come back as
                         themselves (jobjectID2jobject's object has that id
                         again; RequestEvent(OBJECT_ALLOC) answers that id,
                         class and size), the 500 freed ones are refused
                         (NULL, JVMPI_FAIL, no event)
    jvmpi_heap_dump      a heap-dump reader written to the dump formats alone
                         (heap_reader.c), on JvmpiCalls heap: at levels 2
                         (RequestEvent's NULL), 1 and 0, exactly the 5 Node, 37
                         Counted and 1 Marker instances; at levels 1 and 2 the
                         chain Holder.head -> next -> ... of 5 Nodes (level 2:
                         each value:weight i:1000+i, level 1: no primitive
                         values, instance lengths of references only), the
                         Counted[37] with its 37 elements and element class, the
                         int[11] (level 2: 0,1,4..100; level 1: no elements),
                         Holder's CLASS_DUMP statics (level 2: 42 and
                         0x1122334455667788 big-endian, references to the head,
                         the array and the int[]), the Marker's JAVA_FRAME root
                         on the thread "holder" whose frame number indexes
                         hold() in that thread's trace in the event, one
                         STICKY_CLASS root for java/lang/Object, every record
                         parsed with the class layouts CLASS_LOAD gave (array
                         classes included); level 0: the same ids with kinds
                         NORMAL_OBJECT, JVMPI_CLASS (2) and JVMPI_INT (10);
                         OBJECT_DUMP of Holder's class object: its CLASS_DUMP,
                         statics equal to the heap dump's
    jvmpi_monitors       monitor_logger.c on JvmpiCalls monitors: on the object
                         "blocked" contends for while main holds it, exactly
                         one CONTENDED_ENTER and ENTERED (blocked's) and one
                         CONTENDED_EXIT whose env_id is main's, posted before
                         the ENTERED; a MONITOR_DUMP with one JAVA record listing
                         "waiter" (in Object.wait, the monitor owned by no one)
                         among the threads waiting to be notified (JDK 23+ no
                         longer gives that monitor as contended)
    jvmpi_instructions   INSTRUCTION_START enabled in JVM_OnLoad (instruction_counter.c)
                         on JvmpiCalls branches: exactly the 104 byte codes
                         evens(10) runs (javac's 4 + 10 iterations of 9, 5 of
                         them 10, + 3 + 2); its two conditional branches with
                         is_true 1 of 11 times (the loop's exit) and 5 of 10
                         (odd i); table(0..4)'s tableswitch keys 0,1,2 and, for
                         the two defaults, hi + 1, low 0, hi 2; lookup(1, 100,
                         5)'s chosen pairs 0 and 1 and one default
    jvmpi_toggle         EnableEvent/DisableEvent of every event number:
                         SUCCESS for the 34 defined non-dump events,
                         NOT_AVAILABLE for the 3 dumps and the 24 unused
                         numbers; METHOD_ENTRY and CLASS_LOAD disabled and
                         enabled again while the program runs: exact counts
                         (a: 170 entries, 220 exits), and the class loaded
                         while CLASS_LOAD was off announced when it came back on
    jvmpi_agentlib       -agentlib:jvmpi=toggler with LD_LIBRARY_PATH: the
                         layer and the agent found by name (libNAME.so)
"""

import os
import re
import subprocess

from jvmpi_agents import HEADER_CHECK, check_done, lines_of, run_agent, run_calls, source_line
from run import BUILD, CLASSES

# javac numbers lambdas in an order that changes with the source: they are
# compared by their method's name (lambda$calls).
LAMBDA = re.compile(r"(lambda\$\w+)\$\d+")


def test_jvmpi_header(jvmpi_agents):
    p = subprocess.run([HEADER_CHECK], capture_output=True, text=True)
    assert p.returncode == 0 and re.match(r"^ok \d+$", p.stdout.strip()), \
        "header check: expected exit 0 and 'ok N', found exit %d: %s" % (p.returncode, p.stdout.strip())


# ------------------------------------------------------------ method counter

def test_jvmpi_method_counter(ctx, jvmpi_agents):
    _r, lines = run_agent(ctx, "method_counter", "calls", "class=JvmpiCalls")
    methods, totals, traces = {}, {}, {}
    for line in lines:
        line = LAMBDA.sub(r"\1", line)
        m = re.match(r"^method (\S+) (\S+) entries (\d+) exits (\d+)$", line)
        if m:
            methods[(m.group(1), m.group(2))] = (int(m.group(3)), int(m.group(4)))
        m = re.match(r"^thread (.*) total (\d+)$", line)
        if m:
            totals[m.group(1)] = int(m.group(2))
        if line.startswith("trace "):
            traces[line.split()[1]] = line.split()[2:]
    assert "" not in totals, "expected every thread announced with its name, found one without: %s" % [
        line for line in lines if "thread  " in line]
    want = {("main", "a"): (1000, 1000), ("main", "thrower"): (10, 10), ("main", "calls"): (1, 1),
            ("main", "main"): (1, 1), ("main", "<clinit>"): (1, 1)}
    for i in range(4):
        n = (i + 1) * 100
        want[("worker-%d" % i, "work")] = (n, n)
        want[("worker-%d" % i, "leaf")] = (2 * n, 2 * n)
        want[("worker-%d" % i, "lambda$calls")] = (1, 1)
    problems = []
    for key, (entries, exits) in sorted(want.items()):
        got = methods.get(key)
        if got != (entries, exits):
            problems.append("%s on %s: expected exactly %d/%d entries/exits, found %s"
                            % (key[1], key[0], entries, exits, got))
    unexpected = sorted(k for k in methods if k not in want)
    if unexpected:
        problems.append("expected no other method counted, found some the program does not call there: %s"
                        % unexpected)
    for i in range(4):
        name = "worker-%d" % i
        own = sum(methods.get((name, m), (0, 0))[0] for m in ("work", "leaf", "lambda$calls"))
        if totals.get(name, -1) < own:
            problems.append("%s: expected a total of at least its own %d method entries, found %s"
                            % (name, own, totals.get(name)))
        want_trace = ["leaf:%d" % source_line("LEAF_LINE"), "work:%d" % source_line("WORK_CALL_LINE"),
                      "lambda$calls:%d" % source_line('"worker-" + t')]
        if traces.get(name, [])[:3] != want_trace:
            problems.append("%s: expected GetCallTrace to start %s, found %s" % (name, want_trace, traces.get(name)))
    if "main" not in totals:
        problems.append("expected a count for the main thread, found none")
    assert not problems, "; ".join(problems)
    ctx.note("main thread: %d method entries in all (JDK code included)" % totals["main"])


def test_jvmpi_entry2(ctx, jvmpi_agents):
    _r, lines = run_agent(ctx, "method_counter", "classes", "class=JvmpiCalls$Point,entry2")
    got = sorted(line for line in lines if line.startswith(("method ", "entry2 ")))
    want = sorted(["method main <init> entries 2 exits 2", "method main <clinit> entries 1 exits 1",
                   "method main compareTo entries 1 exits 1", "method main norm entries 2 exits 2",
                   "entry2 main <init> objects 2 nulls 0", "entry2 main <clinit> objects 0 nulls 1",
                   "entry2 main compareTo objects 1 nulls 0", "entry2 main norm objects 2 nulls 0"])
    assert got == want, "expected exactly %s, found %s" % (want, got)


# ------------------------------------------------------------ classes and threads

def javap_members(ctx, cls):
    """(methods as name+descriptor, statics and instance fields as name:descriptor)
    of a compiled test class, as javap reads them from its class file."""
    p = subprocess.run([os.path.join(ctx.jdk, "bin", "javap"), "-p", "-s", "-cp", CLASSES, cls],
                       capture_output=True, text=True)
    assert p.returncode == 0, "javap %s: expected exit 0, found %d: %s" % (cls, p.returncode, p.stderr.strip())
    methods, statics, instances = [], [], []
    lines = p.stdout.splitlines()
    for member, desc in zip(lines, lines[1:]):
        desc = desc.strip()
        if not desc.startswith("descriptor: "):
            continue
        desc = desc[len("descriptor: "):]
        member = member.strip().rstrip(";")
        if member == "static {}":
            methods.append("<clinit>" + desc)
        elif "(" in member:
            name = member[:member.index("(")].split()[-1]
            methods.append(("<init>" if name == cls else name) + desc)
        else:
            name = member.split("=")[0].split()[-1]
            (statics if member.startswith("static ") or " static " in member else instances).append(
                "%s:%s" % (name, desc))
    return sorted(methods), sorted(statics), sorted(instances)


def test_jvmpi_classes_threads(ctx, jvmpi_agents):
    _r, lines = run_agent(ctx, "class_thread_counter", "classes", "prefix=JvmpiCalls")
    problems = []
    # Each class exactly as javap reads its class file.
    for cls, interfaces in (("JvmpiCalls$Point", 1), ("JvmpiCalls", 0)):
        got = [line for line in lines if line.startswith("class %s " % cls)]
        m = re.match(r"^class \S+ source (\S+) interfaces (\d+) methods (\d+) \((.*?)\) "
                     r"statics \((.*?)\) instances \((.*?)\)$", got[0]) if len(got) == 1 else None
        methods, statics, instances = javap_members(ctx, cls)
        if not m or m.group(1) != "JvmpiCalls.java" or int(m.group(2)) != interfaces or \
                int(m.group(3)) != len(methods) or sorted(m.group(4).split()) != methods or \
                sorted(m.group(5).split()) != statics or sorted(m.group(6).split()) != instances:
            problems.append("CLASS_LOAD of %s: expected one line with source JvmpiCalls.java, %d interfaces and "
                            "javap's methods %s statics %s instances %s; found %r"
                            % (cls, interfaces, methods, statics, instances, got))
    if "requested java/lang/Object" not in lines:
        problems.append("expected RequestEvent(CLASS_LOAD, java/lang/Object) answered with a requested event, "
                        "found no 'requested java/lang/Object'")
    for i in range(3):
        name = "t-%d" % i
        starts = [n for n, line in enumerate(lines) if line == "start %s group main" % name]
        ends = [n for n, line in enumerate(lines) if line == "end %s" % name]
        if len(starts) != 1 or len(ends) != 1 or starts[0] > ends[0]:
            problems.append("%s: expected one THREAD_START then one THREAD_END, found THREAD_START at lines %s, "
                            "THREAD_END at %s" % (name, starts, ends))
    if "start main group main" not in lines or "init" not in lines or \
            lines.index("start main group main") > lines.index("init"):
        problems.append("expected main announced before JVM_INIT_DONE, found it %s"
                        % ("after" if "start main group main" in lines else "never announced"))
    summary = [line for line in lines if line.startswith("summary ")]
    assert len(summary) == 1, "; ".join(
        problems + ["expected one summary (JVM_SHUT_DOWN) line, found %d" % len(summary)])
    s = dict(zip(summary[0].split()[1::2], map(int, summary[0].split()[2::2])))
    if s["duplicates"] != 0 or s["object"] != 1 or s["unbalanced"] != 0:
        problems.append("expected no class twice, java/lang/Object once and GC events paired, found %s" % summary[0])
    if s["classes"] < 400:
        problems.append("expected at least 400 classes announced (those loaded before the agent too), found %d"
                        % s["classes"])
    if s["gc_start"] < 3 or s["gc_start"] != s["gc_finish"]:
        problems.append("expected at least 3 GC_START (3 System.gc()) and as many GC_FINISH, found %d and %d"
                        % (s["gc_start"], s["gc_finish"]))
    assert not problems, "; ".join(problems)
    ctx.note("%d classes announced, %d GCs" % (s["classes"], s["gc_start"]))


# ------------------------------------------------------------ allocations

def test_jvmpi_alloc(ctx, jvmpi_agents):
    _r, lines = run_agent(ctx, "alloc_logger", "alloc", "class=JvmpiCalls$Blob")
    problems = []
    m = [re.match(r"^objects (\d+) sizes (\d+) distinct_ids (\d+)$", line) for line in lines]
    m = [x for x in m if x]
    if len(m) != 1 or int(m[0].group(1)) != 1151 or int(m[0].group(3)) != 1151 or int(m[0].group(2)) < 24:
        problems.append("Blob instances: expected 1151 of one size, 1151 distinct ids, found %s"
                        % [line for line in lines if line.startswith("objects")])
    int_size = (16 + 4 * 12347 + 7) // 8 * 8
    for want in ("arrays 261", "arrays_of_arrays 10", "int_arrays %d 300" % int_size, "arena 1",
                 "arena_new 1 Java heap", "request_object SAME", "request_class CLASS",
                 "object_dump instance OK array OK class OK"):
        if want not in lines:
            problems.append("expected %r, found none" % want)
    others = [line for line in lines if line.startswith("arena ") and line != "arena 1"]
    if others:
        problems.append("expected one arena, found others: %s" % others)
    assert not problems, "; ".join(problems) + " in %s" % lines


# ------------------------------------------------------------ class hook, JNI references

def test_jvmpi_hook_refs(ctx, jvmpi_agents):
    r, lines = run_agent(ctx, "hook_refs", "hook")
    problems = []
    if "hook text JVMPI-REPLACED" not in r.stderr:
        problems.append("expected the class the agent rewrote to run rewritten ('hook text JVMPI-REPLACED'), "
                        "found: %s" % r.stderr[-300:])
    want = ["hooks MANY bad_magic 0 replaced 1", "globalref alloc SAME free SAME",
            "weakref alloc SAME free SAME", "text_entries 1"]
    if lines != want:
        problems.append("expected %s, found %s" % (want, lines))
    assert not problems, "; ".join(problems)


# ------------------------------------------------------------ compiled methods

def test_jvmpi_compiled(ctx, jvmpi_agents):
    _r, lines = run_agent(ctx, "compiled_logger", "hot", "method=hot")
    m = re.match(r"^compiled hot loads (\d+) code OK lines (\d+) in_range (\d+)$", lines[0]) if lines else None
    assert m and int(m.group(1)) >= 1 and int(m.group(2)) >= 1 and m.group(2) == m.group(3), \
        "expected COMPILED_METHOD_LOADs of hot() with code and every line in range, found %s" % lines
    ctx.note("hot() compiled %s times, %s line entries" % (m.group(1), m.group(2)))


# ------------------------------------------------------------ frees, GC, unloading

def test_jvmpi_free(ctx, jvmpi_agents):
    _r, lines = run_agent(ctx, "free_logger", "free", "class=JvmpiCalls$Blob,gone=JvmpiCalls$Gone")
    want = ["objects allocated 1000 freed 500 misplaced 0", "gc pairs SOME unbalanced 0 bad_statistics 0",
            "class JvmpiCalls$Gone loaded 1 unloaded 1",
            "heap_dump0 SUCCESS live 500 kinds OK freed_present 0 total MANY", "heap_dump2 SUCCESS",
            "lookup live 500 right 500 wrong 0 freed_refused 500 freed_answered 0",
            "lookup live 500 right 500 wrong 0 freed_refused 500 freed_answered 0"]
    assert lines == want, "expected %s, found %s" % (want, lines)


# ------------------------------------------------------------ heap dumps

def test_jvmpi_heap_dump(ctx, jvmpi_agents):
    r, lines = run_agent(ctx, "heap_reader", "heap")
    squares = ",".join(str(i * i) for i in range(11))
    chain = " ".join("%d:%d" % (i, 1000 + i) for i in range(5))
    roots = "frame_root holder:hold sticky_object 1 bad 0"
    want = ["level2 SUCCESS nodes 5 counted 37 marker 1 chain %s array 37/37/Counted squares 11:%s statics "
            "answer=2a,big=1122334455667788,head=node,counted=counted,squares=squares %s" % (chain, squares, roots),
            "level1 SUCCESS nodes 5 counted 37 marker 1 chain - - - - - array 37/37/Counted squares 11 statics "
            "answer=-,big=-,head=node,counted=counted,squares=squares %s" % roots,
            "level0 SUCCESS nodes 5 counted 37 marker 1 array 2 squares 10 bad 0",
            "class_dump SUCCESS answer,big,head,counted,squares"]
    assert lines == want, "expected %s, found %s" % (want, lines)
    said = [line for line in r.stderr.splitlines() if "jvmpi:" in line]
    assert not said, "expected no complaint of the layer's on stderr, found: %s" % said[:3]


# ------------------------------------------------------------ monitors, instructions

def expect_lines(ctx, agent_name, mode, want):
    """Runs JvmpiCalls mode with the agent (out=FILE only); FILE must hold exactly want."""
    _r, lines = run_agent(ctx, agent_name, mode)
    assert lines == want, "expected %s, found %s" % (want, lines)


def test_jvmpi_monitors(ctx, jvmpi_agents):
    expect_lines(ctx, "monitor_logger", "monitors",
                 ["enter blocked 1", "entered blocked 1", "exit main 1", "order OK", "monitor_dump waiter 1"])


def test_jvmpi_instructions(ctx, jvmpi_agents):
    expect_lines(ctx, "instruction_counter", "branches",
                 ["evens instructions 104 ifs 11/1 10/5", "table keys 0,1,2,3,3 low 0 hi 2",
                  "lookup pairs 0,1 defaults 1"])


# ------------------------------------------------------------ enable / disable

def check_toggle(lines):
    want = ["enable success 34 not_available 27 fail 0 dumps_not_available 3",
            "disable success 34 not_available 27 fail 0",
            "method a entries 170 exits 220", "method b entries 1 exits 1", "method c entries 0 exits 1",
            "method toggle entries 1 exits 1", "method main entries 1 exits 1",
            "method <clinit> entries 1 exits 1",
            "late_class_loads 1 late_before_enable 0"]
    missing = [w for w in want if w not in lines]
    assert not missing and len(lines) == len(want), "expected exactly %s; found %s" % (want, lines)


def test_jvmpi_toggle(ctx, jvmpi_agents):
    _r, lines = run_agent(ctx, "toggler", "toggle")
    check_toggle(lines)


def test_jvmpi_agentlib(ctx, jvmpi_agents):
    out = ctx.path("toggle.txt")
    r = run_calls(ctx, "toggler=out=" + out, "toggle", agentlib=True,
                  env={"LD_LIBRARY_PATH": BUILD + ":" + jvmpi_agents})
    check_done(r, "toggle")
    check_toggle(lines_of(out))
