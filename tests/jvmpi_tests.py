"""JVMPI layer tests (imported by tests/run.py): agents written to the JVMPI
specification alone (tests/jvmpi/*.c, compiled against build/include/jvmpi.h
with -Wall -Werror), loaded by build/libjvmpi.so into real JVMs, on
JvmpiCalls, whose calls, classes and threads are known exactly.

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
    jvmpi_functions      on threads JvmpiCalls keeps in known states, from a
                         thread the agent made (CreateSystemThread):
                         GetThreadStatus RUNNABLE / CONDVAR_WAIT (sleep) /
                         MONITOR_WAIT (blocked); RAW_MONITOR_CONTENDED_ENTER,
                         _ENTERED and _EXIT once each on a raw monitor the
                         checker holds while a second agent thread enters; a
                         MONITOR_DUMP (u1 records,
                         u4 big-endian) where main owns once the monitor blocked
                         waits to enter, the agent's raw monitor is owned once
                         by the asking thread, blocked's status is MONITOR_WAIT;
                         GetCallTrace of the suspended
                         spinner (spin() at its line), ThreadHasRun 1 for the
                         spinner and 0 for the sleeper, GetThreadObject and
                         GetMethodClass equal to THREAD_START's and CLASS_LOAD's
                         ids, GetCurrentThreadCpuTime, another thread's local
                         storage, RunGC posting GC_START, SIGQUIT posting
                         DATA_DUMP_REQUEST, MONITOR_CONTENDED_ENTER,
                         MONITOR_WAIT (timeout 200) / WAITED (same object, about
                         200 ms waited), then ProfilerExit(42): exit code 42
                         after JVM_SHUT_DOWN, long before the program would end
    jvmpi_functions_jdwp the same with -agentlib:jdwp after the layer: the
                         debugger starts (it listens), every check passes, and
                         one note says SuspendThread does nothing as the
                         debugger holds can_suspend (HotSpot: one agent's)
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
    jvmpi_coverage       coverage_agent.c, a coverage tool that uses JVMPI as JCov
                         does (CLASS_LOAD_HOOK's class file, METHOD_ENTRY,
                         INSTRUCTION_START, tables locked from GC_START to
                         GC_FINISH), on JvmpiCoverage: exact calls per method
                         (sign 14 on two threads, neverCalled 0, NeverLoaded never
                         loaded), the lines that never ran (neverCalled's, case
                         1000, the body of an if never taken), each if's
                         evaluations and takes (sign's 14/8, loops n+1/1), each
                         switch's ways (keys 0,1,2 once, default twice;
                         pairs 1,1,0, default once), every offset an
                         instruction of the class file's code although the layer
                         rewrote every method for METHOD_ENTRY, and pairs_total
                         the lookupswitch's own count
    jvmpi_coverage_alloc the same with OBJECT_ALLOC enabled too (the layer's call
                         after squares' new int[n] shifts the code after it)
    jvmpi_coverage_far   a conditional branch the rewriter widens (around a
                         goto_w: METHOD_ENTRY's exit calls put its target out of
                         16-bit reach) posts one event per run at its class-file
                         offset with its original way (2 taken of 5); its 2,900
                         inner branches 3/3
    jvmpi_commands       build/hprof on a JVM running a JVMPI agent (request_logger.c)
                         through libjvmpi.so: `hprof dump <pid>` (the layer
                         found in the JVM's mappings, no --agent) posts
                         DATA_DUMP_REQUEST, `hprof reset` DATA_RESET_REQUEST,
                         each once, on the announced "Attach Listener"; status
                         says both are enabled; start is refused with the
                         reason (rc 1); --agent libjvmpi.so works as well;
                         SIGQUIT posts DATA_DUMP_REQUEST on "Signal
                         Dispatcher"; exactly 4 dumps and 1 reset in order
    jvmpi_toggle         EnableEvent/DisableEvent of every event number:
                         SUCCESS for the 34 defined non-dump events,
                         NOT_AVAILABLE for the 3 dumps and the 24 unused
                         numbers; METHOD_ENTRY and CLASS_LOAD disabled and
                         enabled again while the program runs: exact counts
                         (a: 170 entries, 220 exits), and the class loaded
                         while CLASS_LOAD was off announced when it came back on
    jvmpi_agentlib       -agentlib:jvmpi=toggler with LD_LIBRARY_PATH: the
                         layer and the agent found by name (libNAME.so)
    jvmpi_checkjni       five of the agents above under -Xcheck:jni: no warning
                         (local references, exceptions left pending)
    jvmpi_asan           the layer built with ASan+UBSan running eight of the agents
                         above (coverage_agent.c with alloc; hprof_like.c's heap
                         dumps while JvmpiCalls define defines classes) with
                         their exact results
    jvmpi_hprof_requests hprof_like.c, an agent that uses JVMPI as HPROF did, on
                         JvmpiCalls hprof: RequestEvent(OBJECT_ALLOC) of each
                         class object from CLASS_LOAD and of each object's class
                         from OBJECT_ALLOC (java/lang/Class's class object asks
                         for itself): hundreds answered, nested at most 4
                         deep, exactly one refused (an object already being
                         described on the thread is not delivered again)
    jvmpi_hprof_dump     hprof_like.c reading a level 2 HEAP_DUMP at JVM_SHUT_DOWN
                         (thousands of records), asked for after disabling every
                         event as HPROF does: every class it names (CLASS_DUMP
                         and its super, INSTANCE_DUMP's class, OBJ_ARRAY_DUMP's
                         element class, such as JvmpiCalls$Unlinked of the
                         Unlinked[3], never linked, and JvmpiCalls$Base[], made
                         by the JVM with Made[]; STICKY_CLASS roots: none for
                         the classes loaded but never linked) had its
                         CLASS_LOAD first; every object of the dump it did not
                         know (thousands, made before its first OBJECT_ALLOC)
                         asked for by id as HPROF does, and answered as that
                         object: its id, the class (an array's element class)
                         and the kind the dump gives it
    jvmpi_dump_new_classes hprof_like.c on JvmpiCalls define: 3 level 2
                         HEAP_DUMPs while thread "definer" defines classes
                         (each a loader's own JvmpiCalls$Carrier): every kept
                         Carrier in each, with all its fields (its class
                         loaded after the layer read the class list
                         included), and no line of the layer's on stderr
    jvmpi_dump_described hprof_like.c: a level 2 HEAP_DUMP describes every object it
                         names as a root or a static value;
                         the nine primitive types' Class objects, named by
                         JVMTI's walk without a record, are INSTANCE_DUMPs of
                         java/lang/Class (every field's value), and so, the
                         agent having turned CLASS_LOAD off, are the Class
                         objects of classes never linked
    jvmpi_hprof_arrays   hprof_like.c: every OBJECT_ALLOC of an array of references
                         names an element class that had its CLASS_LOAD before
                         (JvmpiCalls$Unlinked of new Unlinked[3], never linked
                         by the program, included)
    jvmpi_hprof_classes  hprof_like.c: every OBJECT_ALLOC's class had its CLASS_LOAD
                         before (java/lang/Class for the class objects asked for
                         in the sweep at VMInit, java/lang/Thread for main's),
                         every event's thread its THREAD_START (the one posting
                         JVM_SHUT_DOWN too; hprof_like forgets a thread at
                         THREAD_END, as HPROF does)
    jvmpi_hprof_traces   hprof_like.c: JvmpiCalls$Made's allocation traces start
                         at the allocating method (made(), 100, and
                         MadeHolder.<init>, 1; not Object.<init> or Made's own
                         constructors), every trace's method resolves
    jvmpi_hprof_quiet    hprof_like.c's heap dump after thread "short" ended: no
                         message of the layer's on stderr (a thread that ended,
                         a call after the VM's death fail quietly)
    jvmpi_onload_exit    ProfilerExit(3) in JVM_OnLoad after a printf on standard
                         output (JCov's `help`): exit code 3, the text there, the
                         program never run
    jvmpi_loader_errors  no agent named, a missing library, a library without
                         JVM_OnLoad, JVM_OnLoad returning JNI_ERR: the JVM
                         stops at start-up, the program never runs, and the
                         message names the library and what is wrong
"""

import os
import re
import signal
import subprocess
import time

from jdwp import JDWP_SERVER

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS_DIR)
BUILD = os.path.join(ROOT, "build")
LAYER = os.path.join(BUILD, "libjvmpi.so")
AGENTS = os.path.join(BUILD, "tests", "jvmpi")
JAVA_SRC = os.path.join(TESTS_DIR, "java", "JvmpiCalls.java")
CLASSES_DIR = os.path.join(BUILD, "tests", "classes")
# javac numbers lambdas in an order that changes with the source: they are
# compared by their method's name (lambda$calls).
LAMBDA = re.compile(r"(lambda\$\w+)\$\d+")


def make_tests(Fail, Skip, asan_env=None):
    built = {}

    def build_agents():
        """The test agents and the header check, built once per test run."""
        if "rc" not in built:
            log = os.path.join(BUILD, "tests", "jvmpi-make.log")
            os.makedirs(os.path.dirname(log), exist_ok=True)
            with open(log, "wb") as f:
                built["rc"] = subprocess.run(["make", "-C", ROOT, "build/libjvmpi.so", "jvmpi-test-agents"],
                                             stdout=f, stderr=subprocess.STDOUT).returncode
            built["log"] = log
        if built["rc"] != 0:
            raise Fail("make jvmpi-test-agents failed, see " + built["log"])

    def agent(name):
        return os.path.join(AGENTS, "lib%s.so" % name)

    def run(ctx, agent_spec, mode, expect_rc=0, env=None, agentlib=False, jvm=(), layer=LAYER):
        build_agents()
        if agentlib:
            return ctx.run("JvmpiCalls", [mode], jvm=list(jvm) + ["-agentlib:jvmpi=" + agent_spec], env=env,
                           expect_rc=expect_rc)
        return ctx.run("JvmpiCalls", [mode], agent=agent_spec, agent_path=layer, env=env, expect_rc=expect_rc,
                       jvm=jvm)

    def lines_of(path):
        if not os.path.isfile(path):
            raise Fail("the agent wrote no %s" % path)
        with open(path) as f:
            return f.read().splitlines()

    def source_line(marker, source=JAVA_SRC):
        with open(source) as f:
            for n, line in enumerate(f, 1):
                if marker in line:
                    return n
        raise Fail("marker %s not in %s" % (marker, source))

    def javap_members(ctx, cls):
        """(methods as name+descriptor, statics and instance fields as name:descriptor)
        of a compiled test class, as javap reads them from its class file."""
        p = subprocess.run([os.path.join(ctx.jdk, "bin", "javap"), "-p", "-s", "-cp", CLASSES_DIR, cls],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise Fail("javap %s: %s" % (cls, p.stderr.strip()))
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

    def check_done(r, mode):
        if ("JvmpiCalls %s done" % mode) not in r.stderr:
            raise Fail("the program did not finish: %s" % r.stderr[-500:])

    # ------------------------------------------------------------ header

    def t_header(_ctx):
        build_agents()
        p = subprocess.run([os.path.join(BUILD, "tests", "jvmpi_header_check")], capture_output=True, text=True)
        if p.returncode != 0 or not re.match(r"^ok \d+$", p.stdout.strip()):
            raise Fail("header check: rc %d: %s" % (p.returncode, p.stdout.strip()))

    # ------------------------------------------------------------ method counter

    def t_method_counter(ctx):
        out = ctx.path("counter.txt")
        r = run(ctx, agent("method_counter") + "=out=%s,class=JvmpiCalls" % out, "calls")
        check_done(r, "calls")
        methods, totals, traces = {}, {}, {}
        for line in lines_of(out):
            line = LAMBDA.sub(r"\1", line)
            m = re.match(r"^method (\S+) (\S+) entries (\d+) exits (\d+)$", line)
            if m:
                methods[(m.group(1), m.group(2))] = (int(m.group(3)), int(m.group(4)))
            m = re.match(r"^thread (.*) total (\d+)$", line)
            if m:
                totals[m.group(1)] = int(m.group(2))
            if line.startswith("trace "):
                traces[line.split()[1]] = line.split()[2:]
        if "" in totals:
            raise Fail("a thread was announced without its name: %s" % [l for l in lines_of(out) if "thread  " in l])
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
                problems.append("%s on %s: %s entries/exits, expected exactly %d/%d"
                                % (key[1], key[0], got, entries, exits))
        unexpected = sorted(k for k in methods if k not in want)
        if unexpected:
            problems.append("methods counted that the program does not call there: %s" % unexpected)
        for i in range(4):
            name = "worker-%d" % i
            own = sum(methods.get((name, m), (0, 0))[0] for m in ("work", "leaf", "lambda$calls"))
            if totals.get(name, -1) < own:
                problems.append("%s: total %s below its own %d method entries" % (name, totals.get(name), own))
            want_trace = ["leaf:%d" % source_line("LEAF_LINE"), "work:%d" % source_line("WORK_CALL_LINE"),
                          "lambda$calls:%d" % source_line('"worker-" + t')]
            if traces.get(name, [])[:3] != want_trace:
                problems.append("%s: GetCallTrace %s, expected %s first" % (name, traces.get(name), want_trace))
        if "main" not in totals:
            problems.append("no count for the main thread")
        if problems:
            raise Fail("; ".join(problems))
        ctx.note("main thread: %d method entries in all (JDK code included)" % totals["main"])

    def t_entry2(ctx):
        out = ctx.path("entry2.txt")
        r = run(ctx, agent("method_counter") + "=out=%s,class=JvmpiCalls$Point,entry2" % out, "classes")
        check_done(r, "classes")
        got = sorted(l for l in lines_of(out) if l.startswith(("method ", "entry2 ")))
        want = sorted(["method main <init> entries 2 exits 2", "method main <clinit> entries 1 exits 1",
                       "method main compareTo entries 1 exits 1", "method main norm entries 2 exits 2",
                       "entry2 main <init> objects 2 nulls 0", "entry2 main <clinit> objects 0 nulls 1",
                       "entry2 main compareTo objects 1 nulls 0", "entry2 main norm objects 2 nulls 0"])
        if got != want:
            raise Fail("expected exactly %s, got %s" % (want, got))

    # ------------------------------------------------------------ classes and threads

    def t_classes_threads(ctx):
        out = ctx.path("classes.txt")
        r = run(ctx, agent("class_thread_counter") + "=out=%s,prefix=JvmpiCalls" % out, "classes")
        check_done(r, "classes")
        lines = lines_of(out)
        problems = []
        # Each class exactly as javap reads its class file.
        for cls, interfaces in (("JvmpiCalls$Point", 1), ("JvmpiCalls", 0)):
            got = [l for l in lines if l.startswith("class %s " % cls)]
            m = re.match(r"^class \S+ source (\S+) interfaces (\d+) methods (\d+) \((.*?)\) "
                         r"statics \((.*?)\) instances \((.*?)\)$", got[0]) if len(got) == 1 else None
            methods, statics, instances = javap_members(ctx, cls)
            if not m or m.group(1) != "JvmpiCalls.java" or int(m.group(2)) != interfaces or \
                    int(m.group(3)) != len(methods) or sorted(m.group(4).split()) != methods or \
                    sorted(m.group(5).split()) != statics or sorted(m.group(6).split()) != instances:
                problems.append("CLASS_LOAD of %s: %r; javap: methods %s statics %s instances %s"
                                % (cls, got, methods, statics, instances))
        if "requested java/lang/Object" not in lines:
            problems.append("RequestEvent(CLASS_LOAD, java/lang/Object) not answered with a requested event")
        for i in range(3):
            name = "t-%d" % i
            starts = [n for n, l in enumerate(lines) if l == "start %s group main" % name]
            ends = [n for n, l in enumerate(lines) if l == "end %s" % name]
            if len(starts) != 1 or len(ends) != 1 or starts[0] > ends[0]:
                problems.append("%s: THREAD_START at %s, THREAD_END at %s (one each, start first)"
                                % (name, starts, ends))
        if "start main group main" not in lines or "init" not in lines or \
                lines.index("start main group main") > lines.index("init"):
            problems.append("main not announced before JVM_INIT_DONE")
        summary = [l for l in lines if l.startswith("summary ")]
        if len(summary) != 1:
            raise Fail("; ".join(problems + ["no summary (JVM_SHUT_DOWN) line"]))
        s = dict(zip(summary[0].split()[1::2], map(int, summary[0].split()[2::2])))
        if s["duplicates"] != 0 or s["object"] != 1 or s["unbalanced"] != 0:
            problems.append("summary: %s (no class twice, java/lang/Object once, GC events paired)" % summary[0])
        if s["classes"] < 400:
            problems.append("only %d classes announced: those loaded before the agent are missing" % s["classes"])
        if s["gc_start"] < 3 or s["gc_start"] != s["gc_finish"]:
            problems.append("%d GC_START, %d GC_FINISH for 3 System.gc()" % (s["gc_start"], s["gc_finish"]))
        if problems:
            raise Fail("; ".join(problems))
        ctx.note("%d classes announced, %d GCs" % (s["classes"], s["gc_start"]))

    # ------------------------------------------------------------ allocations

    def t_alloc(ctx):
        out = ctx.path("alloc.txt")
        r = run(ctx, agent("alloc_logger") + "=out=%s,class=JvmpiCalls$Blob" % out, "alloc")
        check_done(r, "alloc")
        lines = lines_of(out)
        problems = []
        m = [re.match(r"^objects (\d+) sizes (\d+) distinct_ids (\d+)$", l) for l in lines]
        m = [x for x in m if x]
        if len(m) != 1 or int(m[0].group(1)) != 1151 or int(m[0].group(3)) != 1151 or int(m[0].group(2)) < 24:
            problems.append("Blob instances: %s, expected 1151 of one size, 1151 distinct ids"
                            % [l for l in lines if l.startswith("objects")])
        int_size = (16 + 4 * 12347 + 7) // 8 * 8
        for want in ("arrays 261", "arrays_of_arrays 10", "int_arrays %d 300" % int_size, "arena 1", "arena_new 1 Java heap",
                     "request_object SAME", "request_class CLASS",
                     "object_dump instance OK array OK class OK"):
            if want not in lines:
                problems.append("no %r" % want)
        others = [l for l in lines if l.startswith("arena ") and l != "arena 1"]
        if others:
            problems.append("other arenas: %s" % others)
        if problems:
            raise Fail("; ".join(problems) + " in %s" % lines)

    # ------------------------------------------------------------ interface functions

    def t_functions(ctx, jvm=()):
        out = ctx.path("functions.txt")
        r = run(ctx, agent("functions_checker") + "=out=" + out, "functions", expect_rc=42, jvm=jvm)
        if "JvmpiCalls functions done" in r.stderr:
            raise Fail("the program ran to its end: ProfilerExit did not end the JVM")
        lines = lines_of(out)
        want = ["status spinner RUNNABLE", "status sleeper CONDVAR_WAIT", "status blocked MONITOR_WAIT",
                "raw_contention enter 1 entered 1 exit 1", "monitor_dump java OK raw OK status OK",
                "trace spinner spin:%d" % source_line("SPIN_LINE"), "has_run spinner 1", "has_run sleeper 0",
                "thread_object SAME", "method_class SAME", "cpu_time OK", "tls_other SAME", "run_gc OK",
                "data_dump OK", "contended blocked SEEN", "WAIT", "shutdown"]
        problems = []
        if len(lines) != len(want):
            problems.append("%d lines, expected %d" % (len(lines), len(want)))
        for got, expected in zip(lines, want):
            if expected == "WAIT":
                m = re.match(r"^wait waiter 200 waited SAME (\d+)$", got)
                if not m or not 190 <= int(m.group(1)) <= 5000:
                    problems.append("%r: expected MONITOR_WAIT timeout 200, WAITED on the same object after "
                                    "about 200 ms" % got)
            elif got != expected:
                problems.append("%r, expected %r" % (got, expected))
        if not jvm and "SuspendThread" in r.stderr:
            problems.append("SuspendThread refused without a debugger: %s" % r.stderr[-400:])
        if problems:
            raise Fail("; ".join(problems) + " in %s" % lines)
        return r

    def t_functions_jdwp(ctx):
        """HotSpot lets one JVMTI agent at a time hold can_suspend, and the
        debugger does not start without it: the layer, listed before it,
        leaves it to the debugger; SuspendThread does nothing then, said once."""
        r = t_functions(ctx, jvm=[JDWP_SERVER])
        problems = []
        if not re.search(r"^Listening for transport dt_socket at address: \d+$", r.stdout, re.M):
            problems.append("JDWP did not listen: %s" % (r.stdout + r.stderr)[-600:])
        note = ("jvmpi: note: SuspendThread, SuspendThreadList and ResumeThread do nothing in this JVM: HotSpot "
                "lets one JVMTI agent at a time suspend threads, and the debugger (-agentlib:jdwp on the command "
                "line) holds that")
        if [l for l in r.stderr.splitlines() if l.startswith("jvmpi:")] != [note]:
            problems.append("expected the one note %r on stderr: %s" % (note, r.stderr[-600:]))
        if problems:
            raise Fail("; ".join(problems))

    # ------------------------------------------------------------ class hook, JNI references

    def t_hook_refs(ctx):
        out = ctx.path("hook.txt")
        r = run(ctx, agent("hook_refs") + "=out=" + out, "hook")
        check_done(r, "hook")
        problems = []
        if "hook text JVMPI-REPLACED" not in r.stderr:
            problems.append("the class the agent rewrote did not run rewritten: %s" % r.stderr[-300:])
        want = ["hooks MANY bad_magic 0 replaced 1", "globalref alloc SAME free SAME",
                "weakref alloc SAME free SAME", "text_entries 1"]
        lines = lines_of(out)
        if lines != want:
            problems.append("expected %s, got %s" % (want, lines))
        if problems:
            raise Fail("; ".join(problems))

    # ------------------------------------------------------------ compiled methods

    def t_compiled(ctx):
        out = ctx.path("compiled.txt")
        r = run(ctx, agent("compiled_logger") + "=out=%s,method=hot" % out, "hot")
        check_done(r, "hot")
        lines = lines_of(out)
        m = re.match(r"^compiled hot loads (\d+) code OK lines (\d+) in_range (\d+)$", lines[0]) if lines else None
        if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1 or m.group(2) != m.group(3):
            raise Fail("expected COMPILED_METHOD_LOADs of hot() with code and every line in range: %s" % lines)
        ctx.note("hot() compiled %s times, %s line entries" % (m.group(1), m.group(2)))

    # ------------------------------------------------------------ frees, GC, unloading

    def t_free(ctx):
        out = ctx.path("free.txt")
        r = run(ctx, agent("free_logger") + "=out=%s,class=JvmpiCalls$Blob,gone=JvmpiCalls$Gone" % out, "free")
        check_done(r, "free")
        want = ["objects allocated 1000 freed 500 misplaced 0", "gc pairs SOME unbalanced 0 bad_statistics 0",
                "class JvmpiCalls$Gone loaded 1 unloaded 1",
                "heap_dump0 SUCCESS live 500 kinds OK freed_present 0 total MANY", "heap_dump2 SUCCESS",
                "lookup live 500 right 500 wrong 0 freed_refused 500 freed_answered 0",
                "lookup live 500 right 500 wrong 0 freed_refused 500 freed_answered 0"]
        lines = lines_of(out)
        if lines != want:
            raise Fail("expected %s, got %s" % (want, lines))

    # ------------------------------------------------------------ heap dumps

    def t_heap_dump(ctx):
        out = ctx.path("heap.txt")
        r = run(ctx, agent("heap_reader") + "=out=" + out, "heap")
        check_done(r, "heap")
        squares = ",".join(str(i * i) for i in range(11))
        chain = " ".join("%d:%d" % (i, 1000 + i) for i in range(5))
        roots = "frame_root holder:hold sticky_object 1 bad 0"
        want = ["level2 SUCCESS nodes 5 counted 37 marker 1 chain %s array 37/37/Counted squares 11:%s statics "
                "answer=2a,big=1122334455667788,head=node,counted=counted,squares=squares %s" % (chain, squares, roots),
                "level1 SUCCESS nodes 5 counted 37 marker 1 chain - - - - - array 37/37/Counted squares 11 statics "
                "answer=-,big=-,head=node,counted=counted,squares=squares %s" % roots,
                "level0 SUCCESS nodes 5 counted 37 marker 1 array 2 squares 10 bad 0",
                "class_dump SUCCESS answer,big,head,counted,squares"]
        lines = lines_of(out)
        if lines != want:
            raise Fail("expected %s, got %s" % (want, lines))
        if "jvmpi:" in r.stderr:
            raise Fail("the layer complained: %s" % [l for l in r.stderr.splitlines() if "jvmpi:" in l][:3])

    # ------------------------------------------------------------ monitors

    def expect_lines(ctx, agent_name, mode, want):
        """Runs JvmpiCalls mode with the agent (out=FILE only); FILE must hold exactly want."""
        out = ctx.path(agent_name + ".txt")
        r = run(ctx, agent(agent_name) + "=out=" + out, mode)
        check_done(r, mode)
        lines = lines_of(out)
        if lines != want:
            raise Fail("expected %s, got %s" % (want, lines))

    def t_monitors(ctx):
        expect_lines(ctx, "monitor_logger", "monitors",
                     ["enter blocked 1", "entered blocked 1", "exit main 1", "order OK", "monitor_dump waiter 1"])

    # ------------------------------------------------------------ instructions

    def t_instructions(ctx):
        expect_lines(ctx, "instruction_counter", "branches",
                     ["evens instructions 104 ifs 11/1 10/5", "table keys 0,1,2,3,3 low 0 hi 2",
                      "lookup pairs 0,1 defaults 1"])

    # ------------------------------------------------------------ coverage (as JCov)

    def coverage_line(marker):
        return source_line(marker, os.path.join(TESTS_DIR, "java", "JvmpiCoverage.java"))

    def coverage(ctx, options, layer=LAYER, env=None):
        """JvmpiCoverage under coverage_agent.c (as JCov: METHOD_ENTRY and INSTRUCTION_START,
        the class files' code from CLASS_LOAD_HOOK); its report must be the program's truth."""
        build_agents()
        out = ctx.path("coverage%s.txt" % options.replace(",", "_"))
        r = ctx.run("JvmpiCoverage", [], agent=agent("coverage_agent") + "=out=%s,class=JvmpiCoverage%s" % (out, options),
                    agent_path=layer, env=env)
        if "JvmpiCoverage done" not in r.stderr:
            raise Fail("the program did not finish: %s" % r.stderr[-500:])
        lines = lines_of(out)
        L = coverage_line
        cls = L("public class JvmpiCoverage")
        # methods: calls, and the lines that never ran (every other line of theirs ran)
        want_methods = {"JvmpiCoverage.<init>()V": (0, [cls]), "JvmpiCoverage.sign(I)I": (14, []),
                        "JvmpiCoverage.neverCalled()V": (0, [L("COV_NEVER"), L("COV_NEVER") + 1]),
                        "JvmpiCoverage.table(I)I": (5, []), "JvmpiCoverage.lookup(I)I": (3, [L("COV_CASE_1000")]),
                        "JvmpiCoverage.squares(I)[I": (1, []), "JvmpiCoverage.guarded([II)I": (2, []),
                        "JvmpiCoverage.main([Ljava/lang/String;)V": (1, [L("COV_MAIN_IF") + 1, L("COV_MAIN_IF") + 2]),
                        "JvmpiCoverage$Box.<init>(I)V": (1, []), "JvmpiCoverage$Box.get()I": (2, []),
                        "JvmpiCoverage$Worker.<init>()V": (1, []), "JvmpiCoverage$Worker.run()V": (1, [])}
        got_methods = {}
        for line in lines:
            m = re.match(r"^method (\S+) entries (\d+) run (\S+) missed (\S+)$", line)
            if m:
                missed = [] if m.group(4) == "-" else [int(x) for x in m.group(4).split(",")]
                got_methods[m.group(1)] = (int(m.group(2)), missed)
        if got_methods != want_methods:
            raise Fail("methods (calls, lines missed): expected %s, got %s" % (want_methods, got_methods))
        want = ["branch JvmpiCoverage.sign %d 14/8" % L("COV_SIGN_IF"),       # x <= 0 (ifle taken) 8 of 14
                "switch JvmpiCoverage.table %d 0:1,1:1,2:1,default:2" % L("COV_TABLE"),
                "switch JvmpiCoverage.lookup %d 0:1,1:1,2:0,default:1" % L("COV_LOOKUP"),
                "branch JvmpiCoverage.squares %d 5/1" % L("COV_SQUARES_LOOP"),
                "branch JvmpiCoverage.main %d 11/1" % L("COV_MAIN_LOOP"),
                "branch JvmpiCoverage.main %d 6/1" % L("COV_MAIN_LOOP2"),
                "branch JvmpiCoverage.main %d 1/1" % L("COV_MAIN_IF"),
                "branch JvmpiCoverage$Worker.run %d 5/1" % L("COV_WORKER_LOOP"),
                "bad 0"]
        got = [l for l in lines if not l.startswith("method ")]
        if got != want:
            raise Fail("expected %s, got %s" % (want, got))
        return r

    def t_coverage(ctx):
        """With METHOD_ENTRY's calls in every method, offsets are the class file's, the calls
        post nothing, branch ways and lookupswitch's pairs_total are right."""
        coverage(ctx, "")

    def t_coverage_alloc(ctx):
        """The same with OBJECT_ALLOC's calls after array allocations too (squares' new int[n])."""
        coverage(ctx, ",alloc")

    def t_coverage_far(ctx):
        """A conditional branch the layer's rewriter turns around a goto_w: JvmpiFar.far's
        `if (x > 0)` skips 2,900 `if (x == K) return K;` (31,771 bytes, in reach); the exit
        calls before their returns put its target out of 16-bit reach. far(-1) twice, far(5)
        three times: its event comes once per call, at its class-file offset, with its
        original way (taken, x <= 0, 2 of 5)."""
        build_agents()
        n = 2900
        src = ["public class JvmpiFar {", "    static int far(int x) {", "        int s = 0;",
               "        if (x > 0) {"]
        src += ["            if (x == %d) return %d;" % (1000 + i, i) for i in range(n)]
        src += ["            s = 1;", "        }", "        return s;", "    }",
                "    public static void main(String[] args) {", "        int t = 0;",
                "        for (int i = 0; i < 5; i++) t += far(i < 2 ? -1 : 5);",
                "        System.err.println(\"JvmpiFar done \" + t);", "    }", "}"]
        java_file = ctx.path("JvmpiFar.java")
        with open(java_file, "w") as f:
            f.write("\n".join(src) + "\n")
        p = subprocess.run([os.path.join(ctx.jdk, "bin", "javac"), "--release", "17", "-d", CLASSES_DIR, java_file],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise Fail("javac JvmpiFar: %s" % p.stderr[-500:])
        out = ctx.path("far.txt")
        r = ctx.run("JvmpiFar", [], agent=agent("coverage_agent") + "=out=%s,class=JvmpiFar" % out, agent_path=LAYER)
        if "JvmpiFar done 3" not in r.stderr:
            raise Fail("the program did not finish: %s" % r.stderr[-500:])
        lines = lines_of(out)
        want = ["branch JvmpiFar.far 4 5/2", "bad 0"]
        got = [l for l in lines if l.startswith("branch JvmpiFar.far 4 ") or l.startswith("bad ")]
        inner = [l for l in lines if l.startswith("branch JvmpiFar.far ") and not l.startswith("branch JvmpiFar.far 4 ")]
        if got != want or len(inner) != n or any(not l.endswith(" 3/3") for l in inner):
            raise Fail("expected %s and %d inner branches 3/3, got %s and %d: %s" %
                       (want, n, got, len(inner), [l for l in inner if not l.endswith(" 3/3")][:3]))

    # ------------------------------------------------------------ hprof dump / reset

    def start_idle(ctx, agent_spec=None):
        """JvmpiCalls idle (with the layer running agent_spec, or no agent),
        READY; returns (the JVM, build/hprof, its environment, the file
        whose creation stops the JVM)."""
        hprof = os.path.join(BUILD, "hprof")
        if subprocess.run(["make", "-C", ROOT, "build/hprof"], capture_output=True).returncode != 0:
            raise Fail("make build/hprof failed")
        stop = ctx.path("stop")
        if os.path.exists(stop):
            os.remove(stop)
        cmd = ctx.java_cmd("JvmpiCalls", ["idle"], agent=agent_spec, agent_path=LAYER if agent_spec else None,
                           jvm=["-Djvmpi.stop=" + stop])
        env = dict(os.environ)
        env.pop("HPROF_AGENT", None)
        with open(ctx.path("idle.stdout"), "wb") as fo, open(ctx.path("idle.stderr"), "wb") as fe:
            jvm = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, cwd=ctx.out)
        deadline = time.time() + 30
        while "READY" not in open(ctx.path("idle.stdout")).read():
            if jvm.poll() is not None or time.time() > deadline:
                jvm.kill()
                jvm.wait()
                raise Fail("the JVM did not start: %s" % open(ctx.path("idle.stderr")).read()[-300:])
            time.sleep(0.05)
        return jvm, hprof, env, stop

    def t_commands(ctx):
        build_agents()
        out = ctx.path("requests.txt")
        jvm, hprof, env, stop = start_idle(ctx, agent("request_logger") + "=out=" + out)
        tools = []

        def tool(*args):
            r = subprocess.run([hprof] + list(args) + [str(jvm.pid)], capture_output=True, text=True, env=env,
                               timeout=60, stdin=subprocess.DEVNULL)
            tools.append("$ hprof %s\nrc %d\n%s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
            return r

        try:
            problems = []
            for args, rc, text in ((["dump"], 0, "DATA_DUMP_REQUEST posted to the JVMPI agent"),
                                   (["reset"], 0, "DATA_RESET_REQUEST posted to the JVMPI agent"),
                                   (["dump"], 0, "DATA_DUMP_REQUEST posted"),
                                   (["status"], 0, "dump posts DATA_DUMP_REQUEST (enabled), reset DATA_RESET_REQUEST "
                                                   "(enabled)"),
                                   (["start"], 1, "the JVMPI layer takes dump, reset and status"),
                                   (["dump", "--agent", LAYER], 0, "DATA_DUMP_REQUEST posted")):
                r = tool(*args)
                if r.returncode != rc or text not in r.stdout + r.stderr:
                    problems.append("hprof %s: rc %d (want %d), %r" % (" ".join(args), r.returncode, rc,
                                                                        (r.stdout + r.stderr).strip()[-300:]))
            jvm.send_signal(signal.SIGQUIT)                 # the JVM's own way: posted by the layer too
            deadline = time.time() + 10
            while "dump 4" not in (open(out).read() if os.path.exists(out) else ""):
                if time.time() > deadline:
                    break
                time.sleep(0.05)
            open(stop, "w").close()
            jvm.wait(timeout=60)
        finally:
            if jvm.poll() is None:
                jvm.kill()
                jvm.wait()
            with open(ctx.path("tools.txt"), "w") as f:
                f.write("\n".join(tools))
        if problems:
            raise Fail("; ".join(problems))
        # Commands and SIGQUIT alike come through the orchestrator's agent
        # thread, which the layer announces as any thread (THREAD_START).
        want = ["dump 1 thread JVMPI layer", "reset 1 thread JVMPI layer", "dump 2 thread JVMPI layer",
                "dump 3 thread JVMPI layer", "dump 4 thread JVMPI layer", "requests dump 4 reset 1"]
        lines = lines_of(out)
        if lines != want:
            raise Fail("expected %s, got %s" % (want, lines))

    def t_attach_refused(ctx):
        """libjvmpi.so into a running JVM without it: refused with the reason, the JVM unharmed."""
        jvm, hprof, env, stop = start_idle(ctx)
        try:
            r = subprocess.run([hprof, "attach", "--agent", LAYER, str(jvm.pid)], capture_output=True, text=True,
                               env=env, timeout=60, stdin=subprocess.DEVNULL)
            with open(ctx.path("attach.txt"), "w") as f:
                f.write("rc %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
            if r.returncode == 0 or "it cannot be attached to a running JVM" not in r.stdout + r.stderr:
                raise Fail("hprof attach --agent libjvmpi.so: rc %d, %r" % (r.returncode,
                                                                          (r.stdout + r.stderr).strip()[-300:]))
            open(stop, "w").close()
            rc = jvm.wait(timeout=60)
            if rc != 0:
                raise Fail("the JVM exited %d after the refused attach" % rc)
        finally:
            if jvm.poll() is None:
                jvm.kill()
                jvm.wait()

    # ------------------------------------------------------------ enable / disable

    def check_toggle(lines):
        want = ["enable success 34 not_available 27 fail 0 dumps_not_available 3",
                "disable success 34 not_available 27 fail 0",
                "method a entries 170 exits 220", "method b entries 1 exits 1", "method c entries 0 exits 1",
                "method toggle entries 1 exits 1", "method main entries 1 exits 1",
                "method <clinit> entries 1 exits 1",
                "late_class_loads 1 late_before_enable 0"]
        missing = [w for w in want if w not in lines]
        if missing or len(lines) != len(want):
            raise Fail("expected exactly %s; got %s" % (want, lines))

    def t_toggle(ctx):
        out = ctx.path("toggle.txt")
        r = run(ctx, agent("toggler") + "=out=" + out, "toggle")
        check_done(r, "toggle")
        check_toggle(lines_of(out))

    def t_agentlib(ctx):
        out = ctx.path("toggle.txt")
        r = run(ctx, "toggler=out=" + out, "toggle", agentlib=True,
                env={"LD_LIBRARY_PATH": BUILD + ":" + AGENTS})
        check_done(r, "toggle")
        check_toggle(lines_of(out))

    # ------------------------------------------------------------ JNI use

    def t_checkjni(ctx):
        problems = []
        for name, options, mode in (("method_counter", "class=JvmpiCalls", "calls"),
                                    ("free_logger", "class=JvmpiCalls$Blob,gone=JvmpiCalls$Gone", "free"),
                                    ("hook_refs", "", "hook"), ("class_thread_counter", "prefix=JvmpiCalls", "classes"),
                                    ("heap_reader", "", "heap")):
            out = ctx.path(name + ".txt")
            spec = agent(name) + "=out=" + out + ("," + options if options else "")
            r = run(ctx, spec, mode, jvm=["-Xcheck:jni"])
            check_done(r, mode)
            warnings = sorted(set(l for l in r.stderr.splitlines() if "WARNING" in l or "FATAL" in l))
            if warnings:
                problems.append("%s: %s" % (name, warnings[:3]))
        if problems:
            raise Fail("-Xcheck:jni: " + "; ".join(problems))

    # ------------------------------------------------------------ ASan/UBSan

    def t_asan(ctx):
        if asan_env is None:
            raise Skip("gcc's libasan.so not found")
        log = ctx.path("make-asan.log")
        with open(log, "wb") as f:
            if subprocess.run(["make", "-C", ROOT, "build/asan/libjvmpi.so"], stdout=f,
                              stderr=subprocess.STDOUT).returncode != 0:
                raise Fail("make build/asan/libjvmpi.so failed, see " + log)
        layer = os.path.join(BUILD, "asan", "libjvmpi.so")
        problems = []
        for name, options, mode, rc, want in (
                ("method_counter", "class=JvmpiCalls", "calls", 0, "method worker-3 leaf entries 800 exits 800"),
                ("alloc_logger", "class=JvmpiCalls$Blob", "alloc", 0, "arrays 261"),
                ("free_logger", "class=JvmpiCalls$Blob,gone=JvmpiCalls$Gone", "free", 0,
                 "heap_dump0 SUCCESS live 500 kinds OK freed_present 0 total MANY"),
                ("functions_checker", "", "functions", 42, "monitor_dump java OK raw OK status OK"),
                ("hook_refs", "", "hook", 0, "globalref alloc SAME free SAME"),
                ("heap_reader", "", "heap", 0, "class_dump SUCCESS answer,big,head,counted,squares"),
                ("hprof_like", "dump,dumps=2,count=JvmpiCalls$Carrier,ask", "define", 0, "ok")):
            out = ctx.path(name + ".txt")
            spec = agent(name) + "=out=" + out + ("," + options if options else "")
            r = run(ctx, spec, mode, expect_rc=rc, env=asan_env, layer=layer)
            bad = [l for l in r.stderr.splitlines() if "AddressSanitizer" in l or "runtime error" in l]
            if bad:
                problems.append("%s: %s" % (name, bad[:3]))
            if want not in lines_of(out):
                problems.append("%s: no %r in %s" % (name, want, lines_of(out)))
        try:
            r = coverage(ctx, ",alloc", layer=layer, env=asan_env)
            bad = [l for l in r.stderr.splitlines() if "AddressSanitizer" in l or "runtime error" in l]
            if bad:
                problems.append("coverage_agent: %s" % bad[:3])
        except Fail as e:
            problems.append("coverage_agent: %s" % e)
        if problems:
            raise Fail("; ".join(problems))

    # ------------------------------------------------------------ loader errors

    def t_loader_errors(ctx):
        cases = [
            ("", "no JVMPI agent library given"),
            ("/nonexistent/libnothere.so", "cannot load the JVMPI agent library '/nonexistent/libnothere.so'"),
            (agent("no_onload"), "'%s' has no JVM_OnLoad" % agent("no_onload")),
            (agent("class_thread_counter") + "=fail",
             "JVM_OnLoad of the JVMPI agent '%s' returned -1" % agent("class_thread_counter")),
        ]
        problems = []
        for spec, message in cases:
            r = run(ctx, spec, "toggle", expect_rc="nonzero")
            if message not in r.stderr:
                problems.append("%r: no %r in: %s" % (spec, message, r.stderr.strip()[-300:]))
            if "JvmpiCalls toggle done" in r.stderr:
                problems.append("%r: the program ran" % spec)
        if problems:
            raise Fail("; ".join(problems))

    def t_onload_exit(ctx):
        """ProfilerExit in JVM_OnLoad (an agent's usage message, as JCov's `help`): the JVM ends with
        the agent's code and what it printed on standard output."""
        r = run(ctx, agent("class_thread_counter") + "=usage", "toggle", expect_rc=3)
        if "class_thread_counter usage: out=FILE" not in r.stdout:
            raise Fail("the agent's usage was lost: stdout %r" % r.stdout[-300:])
        if "JvmpiCalls toggle done" in r.stderr:
            raise Fail("the program ran")

    # ------------------------------------------------------------ an agent that uses JVMPI as HPROF did

    def hprof_like(ctx, checks, expect_rc=0):
        """hprof_like.c on JvmpiCalls hprof with the given checks: (result, out lines)."""
        out = ctx.path("hprof_like.txt")
        spec = agent("hprof_like") + "=out=%s%s" % (out, "".join("," + c for c in checks))
        r = run(ctx, spec, "hprof", expect_rc=None)
        if r.rc != expect_rc or "hprof_like:" in r.stderr:
            raise Fail("hprof_like (%s): rc %s: %s" % (",".join(checks), r.rc, r.stderr[-1500:]))
        check_done(r, "hprof")
        lines = lines_of(out)
        if not lines or lines[-1] != "ok":
            raise Fail("hprof_like did not end with ok: %s" % lines[-3:])
        return r, lines

    def t_hprof_requests(ctx):
        """RequestEvent(OBJECT_ALLOC) from CLASS_LOAD and OBJECT_ALLOC handlers (the class object,
        java/lang/Class's, and its own): answered, never delivered again from its own handler."""
        _r, lines = hprof_like(ctx, [])
        m = [re.match(r"^requests (\d+) refused (\d+) depth (\d+)", l) for l in lines]
        m = [x for x in m if x]
        if not m:
            raise Fail("no requests line: %s" % lines[-3:])
        requests, refused, depth = (int(x) for x in m[0].groups())
        # Every class object is asked for once (CLASS_LOAD), java/lang/Class's inside it; one request
        # (java/lang/Class's own class object, asked for while it is being described) is refused.
        if requests < 300 or refused != 1 or depth < 2 or depth > 4:
            raise Fail("requests %d refused %d depth %d: expected hundreds of requests, exactly one refused "
                       "(java/lang/Class's class object, asked for inside its own OBJECT_ALLOC), depth 2 to 4"
                       % (requests, refused, depth))

    def t_hprof_dump(ctx):
        """A level 2 HEAP_DUMP at JVM_SHUT_DOWN after the agent disabled every event, as HPROF does:
        every class it names had its CLASS_LOAD first (JvmpiCalls$Base[], which the JVM made with
        Made[] and no object of it, included: announced as CLASS_LOAD was switched off); every
        object in it the agent did not know (made before its OBJECT_ALLOCs), asked for by id as HPROF
        does, answered as that object (its class and kind as the dump gives them)."""
        _r, lines = hprof_like(ctx, ["dump", "off", "fetch"])
        m = [re.search(r"dump_records (\d+)", l) for l in lines]
        m = [x for x in m if x]
        if not m or int(m[0].group(1)) < 1000:
            raise Fail("the heap dump had %s records, expected thousands" % (m[0].group(1) if m else "no"))
        f = [re.match(r"^fetched (\d+) refused (\d+) wrong (\d+)$", l) for l in lines]
        f = [x for x in f if x]
        if not f:
            raise Fail("no fetched line: %s" % lines[-3:])
        fetched, refused, wrong = (int(x) for x in f[0].groups())
        # The JVM's own objects from before the agent's first OBJECT_ALLOC: thousands, all alive.
        if fetched < 1000 or wrong != 0 or refused * 100 > fetched:
            raise Fail("fetched %d refused %d wrong %d: expected thousands, none wrong, (almost) none refused"
                       % (fetched, refused, wrong))

    def t_dump_described(ctx):
        """A level 2 HEAP_DUMP names no object it does not describe: every root's object and static
        value has its record in the dump. The Class objects
        of the nine primitive types (int.class ...: UNKNOWN roots, values of fields such as
        Wrapper.primitiveType), which JVMTI's walk names without describing, are INSTANCE_DUMPs of
        java/lang/Class, each with every instance field's value."""
        _r, lines = hprof_like(ctx, ["dump", "off", "described", "count=java/lang/Class"])
        m = [re.match(r"^named (\d+) undescribed (\d+)$", l) for l in lines]
        m = [x for x in m if x]
        if not m:
            raise Fail("no named line: %s" % lines[-3:])
        named, undescribed = (int(x) for x in m[0].groups())
        if named < 1000 or undescribed != 0:
            raise Fail("the dump named %d objects, %d of them undescribed: expected thousands, none" % (named, undescribed))
        # Nine primitive types', and, the agent having turned CLASS_LOAD off, the Class objects of the
        # classes loaded but never linked (class data sharing maps hundreds into the heap).
        c = [re.match(r"^instances java/lang/Class (\d+) (\d+)$", l) for l in lines]
        c = [x for x in c if x]
        if not c or int(c[0].group(1)) < 9 or c[0].group(1) != c[0].group(2):
            raise Fail("INSTANCE_DUMPs of java/lang/Class: %s, expected at least the 9 primitive types' Class "
                       "objects, all whole" % [l for l in lines if l.startswith("instances")])

    def t_hprof_arrays(ctx):
        """Every OBJECT_ALLOC's class (an array's element class: JvmpiCalls$Unlinked of new Unlinked[3],
        never linked) had its CLASS_LOAD before it."""
        hprof_like(ctx, ["arrays"])

    def t_hprof_classes(ctx):
        """Every OBJECT_ALLOC's class had its CLASS_LOAD before it (the class objects the agent asks
        for during the sweep of the classes loaded before VMInit: java/lang/Class's; main's Thread
        object at its THREAD_START: java/lang/Thread's), and every event's thread had its THREAD_START
        (the thread that posts JVM_SHUT_DOWN, "DestroyJavaVM" on JDK 17 and later, included)."""
        hprof_like(ctx, ["classes", "threads"])

    def t_hprof_traces(ctx):
        """An allocation's trace starts at the allocating method, as a JVMPI VM posted OBJECT_ALLOC at
        `new`: JvmpiCalls$Made's (constructors Made.<init>, Base.<init>, Object.<init> under it) at
        made() 100 times and at MadeHolder.<init> (another class's constructor, which allocates) once;
        and every method of every trace had its CLASS_LOAD."""
        _r, lines = hprof_like(ctx, ["traces", "top=JvmpiCalls$Made"])
        got = sorted(l.split()[2:] for l in lines if l.startswith("top "))
        want = sorted([["JvmpiCalls.made", str(source_line("MADE_LINE")), "100"],
                       ["JvmpiCalls$MadeHolder.<init>", str(source_line("HOLDER_LINE")), "1"]])
        if got != want:
            raise Fail("first frames of JvmpiCalls$Made's allocation traces: %s, expected %s" % (got, want))

    def t_dump_new_classes(ctx):
        """Heap dumps while a thread defines classes (JvmpiCalls define: JvmpiCalls$Carrier again and
        again, each by a loader of its own, the last 200 kept): 3 level 2 dumps at JVM_SHUT_DOWN, each
        with every kept Carrier described with all its fields (a class loaded after the layer read
        the class list included), and no line of the layer's on stderr. A class whose CLASS_LOAD is on
        its way (its thread waits for the agent's lock) is asked for, as JVMPI agents did. Races this
        caught (about 1 run in 30 each): an instance of a Carrier that was loaded but not linked when
        the class list was read had no field values; a class the dump named that was unloaded,
        its CLASS_UNLOAD delivered before the dump. Run with JVMPI_DIAGNOSTICS=1: nothing left out."""
        out = ctx.path("hprof_like.txt")
        spec = agent("hprof_like") + "=out=%s,dump,dumps=3,count=JvmpiCalls$Carrier,ask" % out
        # With the layer's diagnostics: a failure says what the layer left out or refused.
        r = run(ctx, spec, "define", expect_rc=None, env={"JVMPI_DIAGNOSTICS": "1"})
        said = [l for l in r.stderr.splitlines() if l.startswith(("jvmpi:", "hprof_like:"))]
        if r.rc != 0 or said:
            raise Fail("rc %s; on stderr: %s" % (r.rc, said[:5] or r.stderr[-1500:]))
        lines = lines_of(out)
        counts = [l.split()[2:] for l in lines if l.startswith("instances ")]
        if len(counts) != 3 or lines[-1] != "ok":
            raise Fail("expected 3 dumps and ok: %s" % lines[-5:])
        for n, whole in ((int(a), int(b)) for a, b in counts):
            # The 200 kept, and the one being made if the definer was between two stores.
            if n < 200 or whole != n:
                raise Fail("dumps' JvmpiCalls$Carrier instances (count, with every field): %s; expected at "
                           "least 200, all whole" % counts)

    def t_hprof_quiet(ctx):
        """A heap dump after a thread ended (its trace is asked for): nothing of the layer's on stderr."""
        r, _lines = hprof_like(ctx, ["dump"])
        said = [l for l in r.stderr.splitlines() if "JVMTI" in l or l.startswith(("hprof:", "jvmpi:"))]
        if said:
            raise Fail("the layer wrote into the agent's stderr: %s" % said[:5])

    return [("jvmpi_method_counter", t_method_counter), ("jvmpi_entry2", t_entry2),
             ("jvmpi_classes_threads", t_classes_threads),
             ("jvmpi_alloc", t_alloc), ("jvmpi_functions", t_functions),
             ("jvmpi_functions_jdwp", t_functions_jdwp),
             ("jvmpi_hook_refs", t_hook_refs), ("jvmpi_compiled", t_compiled),
             ("jvmpi_free", t_free), ("jvmpi_heap_dump", t_heap_dump), ("jvmpi_commands", t_commands),
             ("jvmpi_attach_refused", t_attach_refused),
             ("jvmpi_monitors", t_monitors), ("jvmpi_instructions", t_instructions),
             ("jvmpi_coverage", t_coverage), ("jvmpi_coverage_alloc", t_coverage_alloc),
             ("jvmpi_coverage_far", t_coverage_far),
            ("jvmpi_toggle", t_toggle), ("jvmpi_agentlib", t_agentlib),
            ("jvmpi_checkjni", t_checkjni), ("jvmpi_asan", t_asan), ("jvmpi_loader_errors", t_loader_errors),
            ("jvmpi_onload_exit", t_onload_exit),
            ("jvmpi_hprof_requests", t_hprof_requests), ("jvmpi_hprof_dump", t_hprof_dump),
             ("jvmpi_dump_new_classes", t_dump_new_classes), ("jvmpi_dump_described", t_dump_described),
            ("jvmpi_hprof_arrays", t_hprof_arrays), ("jvmpi_hprof_quiet", t_hprof_quiet),
            ("jvmpi_hprof_classes", t_hprof_classes), ("jvmpi_hprof_traces", t_hprof_traces)], \
        [("jvmpi_header", t_header)]
