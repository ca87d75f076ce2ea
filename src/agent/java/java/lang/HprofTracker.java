/*
 * The tracker the class-file rewriter's calls land in (hprof cpu=times and
 * heap=sites).
 *
 * The agent defines this class (and HprofThreadState) in java.base's
 * java.lang package with the boot loader, so code of every module can call
 * it without any JVM flag. It is never instrumented itself, and it calls
 * only natives, intrinsics and its own code: an instrumented method called
 * from here would recurse back into the tracker.
 *
 * Per call it does no JNI call and no stack walk: each thread keeps a shadow
 * stack and its counters in HprofThreadState; the agent reads them when it
 * writes a report, and a thread hands its totals to the agent when it ends.
 */
package java.lang;

import jdk.internal.vm.annotation.DontInline;

public final class HprofTracker {
    private HprofTracker() {}

    /** Non-zero while cpu=times counts: a new number at each start, so that a
     *  thread's shadow stack from before a stop is dropped (see current). */
    static volatile int engaged;
    /** depth= : frames that make a trace key. */
    static int depth = 4;

    /* Thread -> state, open addressing by identity hash. Entries never move
     * (a removed one becomes a tombstone), and a bigger table is published
     * whole, so the lock-free lookup of a thread's own entry is always right. */
    private static volatile HprofThreadState[] table = new HprofThreadState[256];
    private static int used;                       /* live entries and tombstones */
    private static final HprofThreadState TOMBSTONE = new HprofThreadState(null, 0, 0, 1, false);

    /* Not inlined into the instrumented methods (HotSpot honours @DontInline in
     * java.base): inlined, the tracker would make every small method too big
     * for the JIT to inline it into its callers, and calls would multiply. */
    @DontInline
    public static void methodEntry(int id) {
        int e = engaged;
        if (e == 0) return;
        HprofThreadState s = current(e);
        if (s != null) s.enter(id);
    }

    @DontInline
    public static void methodExit(int id) {
        int e = engaged;
        if (e == 0) return;
        HprofThreadState s = current(e);
        if (s != null) s.exit(id);
    }

    /** A leaf method's only call (see the rewriter's BCI_COUNT_LEAVES). */
    @DontInline
    public static void methodCount(int id) {
        int e = engaged;
        if (e == 0) return;
        HprofThreadState s = current(e);
        if (s != null) s.count(id);
    }

    /* ---- heap=sites: every allocation ----
     * objectInit runs first thing in java.lang.Object.<init>, so every
     * object built by a constructor passes here once; newArray runs after
     * every newarray, anewarray and multianewarray. The agent names the
     * allocation's site (stack trace, class, size) and tags the object so
     * that its death is counted too (heap_agent.c). */

    /** 1 while heap=sites counts allocations. */
    static volatile int heapEngaged;

    /* The second argument of allocated() is the number of frames on top of
     * the stack, at the native, that are not the allocation's: the agent
     * starts its stack walk below them instead of walking and checking them. */

    @DontInline
    public static void objectInit(Object o) {
        if (heapEngaged != 0) allocated(o, 3);      /* allocated, objectInit, Object.<init> */
    }

    @DontInline
    public static void newArray(Object a) {
        if (heapEngaged == 0) return;
        allocated(a, 2);                            /* allocated, newArray */
        if (a instanceof Object[] outer) innerArrays(outer, 3);
    }

    /* multianewarray made the inner arrays too: they are the non-null
     * elements of an array of arrays that was just allocated. `above` counts
     * allocated, this frame and those of its callers up to newArray. */
    private static void innerArrays(Object[] outer, int above) {
        Class<?> c = outer.getClass().getComponentType();
        if (c == null || !c.isArray()) return;
        for (Object inner : outer) {
            if (inner == null) continue;
            allocated(inner, above);
            if (inner instanceof Object[] deeper) innerArrays(deeper, above + 1);
        }
    }

    /* ---- short methods (odd ids): timed until shown always quick ----
     * A short method (no loop, at most 128 bytes: see the rewriter's
     * BCI_METHOD_SHORT) is timed while it learns. After LEARN_CALLS calls in
     * a row without a timed callee, it is only counted from then on (like a
     * leaf: its time goes to its caller) if they took under QUICK_NS each,
     * callees included, and timed for good otherwise. A call with a timed
     * callee starts the count over: so short methods become counted from the
     * bottom up (a callee first, then its callers), and a recursive method,
     * whose calls keep having timed callees (itself), stays timed. */
    static final byte LEARNING = 0, COUNT_ONLY = 1, TIMED = 2;
    static final int LEARN_CALLS = 1024;
    static final long QUICK_NS = 1000;

    /* Per method id, shared by all threads without locks (a lost update only
     * delays a decision); grown under the class lock, each array published
     * whole, so readers check each one's length. (No holder class: the boot
     * loader could not find it, only the classes the agent defines exist.) */
    private static volatile byte[] mode = new byte[1 << 12];
    private static volatile int[] learnCalls = new int[1 << 12];
    private static volatile long[] learnNs = new long[1 << 12];

    static boolean countOnly(int id) {
        byte[] m = mode;
        return id < m.length && m[id] == COUNT_ONLY;
    }

    /** A short method's call ended after `ns` of CPU time, callees included. */
    static void learnFrom(int id, long ns, boolean timedCallee) {
        byte[] m = mode; int[] c = learnCalls; long[] t = learnNs;
        if (id >= m.length || id >= c.length || id >= t.length) {
            growLearn(id);
            m = mode; c = learnCalls; t = learnNs;
            if (id >= m.length || id >= c.length || id >= t.length) return;
        }
        if (m[id] != LEARNING) return;
        if (timedCallee) { c[id] = 0; t[id] = 0; return; }   /* start over: see above */
        int n = ++c[id];
        long total = t[id] += ns;
        if (n >= LEARN_CALLS) m[id] = total / n < QUICK_NS ? COUNT_ONLY : TIMED;
    }

    private static synchronized void growLearn(int id) {
        int n = mode.length;
        if (id < n && id < learnCalls.length && id < learnNs.length) return;
        while (n <= id) n *= 2;
        long[] t = new long[n]; System.arraycopy(learnNs, 0, t, 0, learnNs.length); learnNs = t;
        int[] c = new int[n]; System.arraycopy(learnCalls, 0, c, 0, learnCalls.length); learnCalls = c;
        byte[] m = new byte[n]; System.arraycopy(mode, 0, m, 0, mode.length); mode = m;
    }

    /* The calling thread's state; its shadow stack is emptied when counting
     * restarted (`start` after `stop`) since the thread last came here: the
     * frames it holds were entered before the stop and left unseen. */
    private static HprofThreadState current(int epoch) {
        Thread t = Thread.currentThread();
        HprofThreadState[] tab = table;
        int mask = tab.length - 1;
        for (int i = System.identityHashCode(t) & mask; ; i = (i + 1) & mask) {
            HprofThreadState s = tab[i];
            if (s == null) { s = create(t); if (s != null) s.epoch = epoch; return s; }
            if (s.thread == t) {
                if (s.epoch != epoch) { s.sp = 0; s.overflow = 0; s.epoch = epoch; }
                return s;
            }
        }
    }

    private static HprofThreadState create(Thread t) {
        long[] info = new long[3];
        if (!register(info)) return null;
        HprofThreadState s = new HprofThreadState(t, info[0], (int) info[1], depth, info[2] != 0);
        synchronized (HprofTracker.class) {
            HprofThreadState[] tab = table;
            if ((used + 1) * 2 > tab.length) {
                int live = 0;
                for (HprofThreadState e : tab) if (e != null && e != TOMBSTONE) live++;
                int n = tab.length;
                while ((live + 1) * 4 > n) n *= 2;
                HprofThreadState[] bigger = new HprofThreadState[n];
                used = 0;
                for (HprofThreadState e : tab)
                    if (e != null && e != TOMBSTONE) { put(bigger, e); used++; }
                tab = bigger;
            }
            put(tab, s);
            used++;
            table = tab;
        }
        return s;
    }

    private static void put(HprofThreadState[] tab, HprofThreadState s) {
        int mask = tab.length - 1;
        int i = System.identityHashCode(s.thread) & mask;
        while (tab[i] != null) i = (i + 1) & mask;
        tab[i] = s;
    }

    /** Called by the agent (ThreadEnd, on the ending thread): hand the totals over. */
    static void threadEnd() {
        Thread t = Thread.currentThread();
        synchronized (HprofTracker.class) {
            HprofThreadState[] tab = table;
            int mask = tab.length - 1;
            for (int i = System.identityHashCode(t) & mask; tab[i] != null; i = (i + 1) & mask) {
                HprofThreadState s = tab[i];
                if (s.thread == t) {
                    s.closeOpenFrames(cpuTime());
                    retire(s.serial, s.count, s.self, s.total, s.nacc, s.tid);
                    tab[i] = TOMBSTONE;
                    return;
                }
            }
        }
    }

    /**
     * Called by the agent for a report: every live thread's totals, each
     * call still running counted up to now, as [trace, calls, self cpu ns,
     * total cpu ns] quadruples (trace 0: keys the agent could not name).
     */
    static long[] snapshot() {
        synchronized (HprofTracker.class) {
            HprofThreadState[] tab = table;
            int n = 0;
            for (HprofThreadState s : tab) if (s != null && s != TOMBSTONE) n += s.nacc;
            long[] out = new long[HprofThreadState.SNAPSHOT_WIDTH * n];
            int k = 0;
            for (HprofThreadState s : tab) {
                if (s == null || s == TOMBSTONE) continue;
                k = s.snapshotInto(out, k, cpuTimeOf(s.tid));
            }
            if (k == out.length) return out;
            long[] trimmed = new long[k];
            System.arraycopy(out, 0, trimmed, 0, k);
            return trimmed;
        }
    }

    /* Natives, registered by the agent when it defines this class. */
    /** Sets up the calling thread: info[0] = address of its perf_event
     *  page (0 if none), info[1] = its kernel thread id, info[2] = 1 if it
     *  is one of the JVM's service threads. False: not now. */
    private static native boolean register(long[] info);
    /** CPU time of the calling thread, ns (CLOCK_THREAD_CPUTIME_ID). */
    static native long cpuTime();
    /** CPU time of thread `tid` of this process, ns. */
    static native long cpuTimeOf(int tid);
    /** The trace serial of the calling thread's stack (tracker frames skipped). */
    static native int trace();
    /** The key of [unwalkable].tracker_keys_full: a thread's keys are full. */
    static native int keysFullTrace();
    /** heap=sites: record one allocation (its site, and a tag to see it die). */
    static native void allocated(Object o, int above);
    /** A finished thread's totals. */
    private static native void retire(int[] serial, long[] count, long[] self, long[] total, int n, int tid);
}
