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

import jdk.internal.misc.Unsafe;
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
    private static final HprofThreadState TOMBSTONE = new HprofThreadState(null, 0, 0, 1, false, false, 0);

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

    /* allocated(object, its class, the class's identity hash, above):
     * the class and hash are intrinsics here, and the agent keeps each
     * thread's recent classes by that hash, so that naming the class costs it
     * one JNI call instead of JVMTI's tag lookup behind a lock shared by all
     * threads. `above` is the number of frames on top of the stack, at the
     * native, that are not the allocation's: the agent starts its stack walk
     * below them instead of walking and checking them. */

    @DontInline
    public static void objectInit(Object o) {
        if (heapEngaged != 0) {
            Class<?> c = o.getClass();
            allocated(o, c, System.identityHashCode(c), 3);   /* allocated, objectInit, Object.<init> */
        }
    }

    @DontInline
    public static void newArray(Object a) {
        if (heapEngaged == 0) return;
        Class<?> c = a.getClass();
        allocated(a, c, System.identityHashCode(c), 2);       /* allocated, newArray */
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
            Class<?> ic = inner.getClass();
            allocated(inner, ic, System.identityHashCode(ic), above);
            if (inner instanceof Object[] deeper) innerArrays(deeper, above + 1);
        }
    }

    /* ---- short methods (odd ids): timed until shown always quick ----
     * A short method (no loop, of any length: see the rewriter's
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
     * delays a decision); grown under TABLE_LOCK, each array published
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

    private static void growLearn(int id) {
        lock(TABLE_LOCK);
        try {
            int n = mode.length;
            if (id < n && id < learnCalls.length && id < learnNs.length) return;
            while (n <= id) n *= 2;
            long[] t = new long[n]; System.arraycopy(learnNs, 0, t, 0, learnNs.length); learnNs = t;
            int[] c = new int[n]; System.arraycopy(learnCalls, 0, c, 0, learnCalls.length); learnCalls = c;
            byte[] m = new byte[n]; System.arraycopy(mode, 0, m, 0, mode.length); mode = m;
        } finally {
            unlock(TABLE_LOCK);
        }
    }

    /* ---- the tracker's locks ----
     * Spin locks, not monitors. A virtual thread that blocks on a monitor
     * (JDK 24 and later) unmounts, and its carrier goes on running the
     * JDK's scheduler code, instrumented like any, which comes back here:
     * with monitors, a carrier blocked on the tracker's lock while the
     * virtual thread to be handed the lock waited for a carrier, and the
     * JVM hung (100,000 virtual threads under cpu=times, JDK 25; the main
     * thread waiting in awaitTermination forever). Nothing between lock()
     * and unlock() blocks or unmounts, so a waiter spins only while the
     * holder runs its few instructions. Natives only (Unsafe's CAS and
     * volatile accesses): this code must call nothing instrumented. */
    private static final Unsafe U = Unsafe.getUnsafe();
    /* A lock is an instance of this class (the agent defines no other), its
     * word lockWord; so are a shared key's counters (see sharedAdd). */
    private volatile int lockWord;
    private static final long LOCK_WORD = U.objectFieldOffset(HprofTracker.class, "lockWord");
    /* TABLE_LOCK guards the thread table and the learning arrays' growth; NAMES_LOCK the key names. */
    private static final HprofTracker TABLE_LOCK = new HprofTracker(), NAMES_LOCK = new HprofTracker();

    private static void lock(HprofTracker l) {
        for (int spins = 0; U.getIntVolatile(l, LOCK_WORD) != 0 || !U.compareAndSetInt(l, LOCK_WORD, 0, 1); ) {
            /* The holder runs a few instructions, unless the OS took its CPU
             * away (2 cores, threads starting and ending): then spinning on
             * burns this thread's time slice, and the holder waits for it.
             * sched_yield, in a native: Thread.yield and onSpinWait are
             * instrumented, and parking could take the program's permit. */
            if (++spins == 64) { spins = 0; yieldCpu(); }
        }
    }

    private static void unlock(HprofTracker l) {
        U.putIntVolatile(l, LOCK_WORD, 0);
    }

    /* A thread's place in the table: its id (Thread.tid, unique, read with
     * Unsafe: Thread.getId is instrumented), spread. Not
     * System.identityHashCode: its compiled form calls into the runtime
     * (JVM_IHashCode) when the Thread's monitor is inflated (Thread.join
     * waits on it), here at every call of every instrumented method: 21% of
     * H2's CPU under cpu=times on JDK 25 (perf), and slower on JDK 17 too.
     * Where the field is missing (a JDK that renamed it), the identity hash. */
    private static final long TID_OFFSET = tidOffset();

    private static long tidOffset() {
        try {
            return U.objectFieldOffset(Thread.class, "tid");     /* InternalError if absent */
        } catch (Throwable e) {
            return -1;
        }
    }

    private static int hashOf(Thread t) {
        if (TID_OFFSET < 0) return System.identityHashCode(t);
        long h = U.getLong(t, TID_OFFSET) * 0x9E3779B97F4A7C15L;
        return (int) (h >>> 32);
    }

    /* The calling thread's state; its shadow stack is emptied when counting
     * restarted (`start` after `stop`) since the thread last came here: the
     * frames it holds were entered before the stop and left unseen. */
    private static HprofThreadState current(int epoch) {
        Thread t = Thread.currentThread();
        HprofThreadState[] tab = table;
        int mask = tab.length - 1;
        for (int i = hashOf(t) & mask; ; i = (i + 1) & mask) {
            HprofThreadState s = tab[i];
            if (s == null) { s = create(t); if (s != null) s.epoch = epoch; return s; }
            if (s.thread == t) {
                if (s.epoch != epoch) { s.sp = 0; s.overflow = 0; s.epoch = epoch; }
                return s;
            }
        }
    }

    private static HprofThreadState create(Thread t) {
        long[] info = new long[5];
        if (!register(t, info)) return null;
        HprofThreadState s = new HprofThreadState(t, info[0], (int) info[1], depth, info[2] != 0, info[3] != 0,
                                                  info[4]);
        lock(TABLE_LOCK);
        try {
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
        } finally {
            unlock(TABLE_LOCK);
        }
        return s;
    }

    private static void put(HprofThreadState[] tab, HprofThreadState s) {
        int mask = tab.length - 1;
        int i = hashOf(s.thread) & mask;
        while (tab[i] != null) i = (i + 1) & mask;
        tab[i] = s;
    }

    /** Called by the agent (ThreadEnd, on the ending thread): hand the totals over. */
    static void threadEnd() {
        Thread t = Thread.currentThread();
        lock(TABLE_LOCK);
        try {
            HprofThreadState[] tab = table;
            int mask = tab.length - 1;
            for (int i = hashOf(t) & mask; tab[i] != null; i = (i + 1) & mask) {
                HprofThreadState s = tab[i];
                if (s.thread == t) {
                    s.closeOpenFrames(s.now());
                    if (!s.shared) retire(s.serial, s.count, s.self, s.total, s.nacc, s.tid);
                    tab[i] = TOMBSTONE;
                    return;
                }
            }
        } finally {
            unlock(TABLE_LOCK);
        }
    }

    /**
     * Called by the agent for a report: every live thread's totals, each
     * call still running counted up to now, as [trace, calls, self cpu ns,
     * total cpu ns] quadruples (trace 0: keys the agent could not name).
     */
    static long[] snapshot() {
        lock(TABLE_LOCK);
        try {
            HprofThreadState[] tab = table;
            int shared;
            int[] serials;
            lock(NAMES_LOCK);
            try {
                shared = names;
                serials = nameSerial;
            } finally {
                unlock(NAMES_LOCK);
            }
            int n = shared;
            for (HprofThreadState s : tab) if (s != null && s != TOMBSTONE) n += s.nacc;
            long[] out = new long[HprofThreadState.SNAPSHOT_WIDTH * n];
            int k = sharedSnapshot(out, shared, serials, tab);
            for (HprofThreadState s : tab) {
                if (s == null || s == TOMBSTONE || s.shared) continue;
                /* A virtual thread's clock is read on itself only: its open
                 * calls count up to its last reading. */
                k = s.snapshotInto(out, k, s.virtual ? s.lastCpu
                                           : s.lent == 0 ? cpuTimeOf(s.tid)
                                           : cpuTimeOf(s.tid) - U.getLongVolatile(null, s.lent));
            }
            if (k == out.length) return out;
            long[] trimmed = new long[k];
            System.arraycopy(out, 0, trimmed, 0, k);
            return trimmed;
        } finally {
            unlock(TABLE_LOCK);
        }
    }

    /* ---- key names shared by virtual threads ---- */

    /** thread=n: a key's name (its trace) does not depend on the thread, so
     *  a key named once, by a walk of the stack that made it, is named so
     *  for every virtual thread. Without this, each virtual thread walked its
     *  stack again for every key it made: a virtual thread runs one task, so
     *  100,000 of them made 100,000 times the same few walks (a 9x slowdown
     *  of the work itself on JDK 25). A platform thread lives long and names
     *  each of its keys once in its own table (HprofThreadState.add): in this
     *  table too, its keys were held twice, with shared counters it never
     *  uses (javac: 82,000 keys, 8 MB more of live heap, and its peak RSS
     *  1.56x the run without the agent against 1.47x before the counters).
     *  Set by the agent before counting starts. */
    static boolean shareNames;
    /** jdk=boundary (HprofThreadState.boundary); set by the agent before
     *  counting starts, read once by each thread's state. */
    static boolean jdkBoundary;
    private static final int MAX_NAMES = 1 << 20;
    private static final int MAX_NAME_IDS = 1 << 22;     /* 16 MB of ids at most */
    /* Shared keys 0 and 1 have no stack: calls whose stack could not be
     * named (trace 0), and calls of new stacks once the table is full
     * ([unwalkable].tracker_keys_full, named at its first use). */
    static final int UNNAMED = 0, FULL = 1;
    private static int names = 2;                          /* keys named, UNNAMED and FULL included */
    private static int nameIdsUsed;
    private static int[] nameIds = new int[256];           /* key k is nameIds[nameStart[k] .. + nameLen[k]) */
    private static int[] nameStart = new int[64], nameLen = new int[64], nameSerial = new int[64];
    private static int[] nameIndex = new int[128];         /* open addressing: k + 1, 0 = empty */

    private static int nameHash(int[] key, int base, int n) {
        int h = n;
        for (int k = 0; k < n; k++) h = h * 0x9E3779B1 + key[base + k];
        return h ^ (h >>> 15);
    }

    /* The slot of this key in nameIndex: its entry, or the empty slot where it goes. NAMES held. */
    private static int nameSlot(int[] key, int base, int n, int h) {
        int mask = nameIndex.length - 1;
        for (int i = h & mask; ; i = (i + 1) & mask) {
            int e = nameIndex[i];
            if (e == 0) return i;
            int a = e - 1;
            if (nameLen[a] != n) continue;
            int s = nameStart[a], k = 0;
            while (k < n && nameIds[s + k] == key[base + k]) k++;
            if (k == n) return i;
        }
    }

    /** thread=n: the shared key (an index into the shared counters) of
     *  key[base .. base + n), which the calling virtual thread's stack has on
     *  top now, named by a walk of that stack the first time any virtual
     *  thread made it; UNNAMED if its stack could not be named now, FULL
     *  once the table is full. */
    static int sharedKey(Thread t, int[] key, int base, int n) {
        int h = nameHash(key, base, n);
        lock(NAMES_LOCK);
        try {
            int e = nameIndex[nameSlot(key, base, n, h)];
            if (e != 0) return e - 1;
        } finally {
            unlock(NAMES_LOCK);
        }
        int serial = trace(t);                /* outside the lock: a stack walk */
        if (serial == 0) return UNNAMED;      /* not named now: not kept */
        lock(NAMES_LOCK);
        try {
            int i = nameSlot(key, base, n, h);
            if (nameIndex[i] != 0) return nameIndex[i] - 1;
            if (names >= MAX_NAMES || nameIdsUsed > MAX_NAME_IDS - n) {
                if (nameSerial[FULL] == 0) nameSerial[FULL] = keysFullTrace();
                return FULL;
            }
            int k = addName(key, base, n, serial);
            nameIndex[i] = k + 1;
            if (names * 2 > nameIndex.length) {
                int[] bigger = new int[nameIndex.length * 2];
                int mask = bigger.length - 1;
                for (int a = FULL + 1; a < names; a++) {
                    int j = nameHash(nameIds, nameStart[a], nameLen[a]) & mask;
                    while (bigger[j] != 0) j = (j + 1) & mask;
                    bigger[j] = a + 1;
                }
                nameIndex = bigger;
            }
            return k;
        } finally {
            unlock(NAMES_LOCK);
        }
    }

    /* A new key, its shared counters made first. NAMES held. */
    private static int addName(int[] key, int base, int n, int serial) {
        if (names == nameLen.length) {
            int m = names * 2;
            int[] a = new int[m], b = new int[m], c = new int[m];
            System.arraycopy(nameStart, 0, a, 0, names);
            System.arraycopy(nameLen, 0, b, 0, names);
            System.arraycopy(nameSerial, 0, c, 0, names);
            nameStart = a; nameLen = b; nameSerial = c;
        }
        if (nameIdsUsed + n > nameIds.length) {
            int m = nameIds.length * 2;
            while (m < nameIdsUsed + n) m *= 2;
            int[] a = new int[m];
            System.arraycopy(nameIds, 0, a, 0, nameIdsUsed);
            nameIds = a;
        }
        int k = names;
        makeSharedCounters(k);
        names = k + 1;
        nameStart[k] = nameIdsUsed;
        nameLen[k] = n;
        nameSerial[k] = serial;
        System.arraycopy(key, base, nameIds, nameIdsUsed, n);
        nameIdsUsed += n;
        return k;
    }

    /* ---- thread=n: virtual threads count into shared counters ----
     * A virtual thread runs one task, usually short, on whatever carrier is
     * free. With counters of its own, each of 100,000 virtual threads made
     * its keys again, grew tables for them (a state was about 1.5 KB) and
     * handed them to the agent at its end: with the states left behind (see
     * the agent's register), cpu=times cost 2.5 times more with virtual
     * threads than with platform threads doing the same tasks. So,
     * with thread=n, a virtual thread keeps only its shadow stack: a frame's
     * key is the shared key of its stack (the names table's index), and its
     * calls and times are added, atomically, to the shared counters [calls,
     * self ns, total ns] of that key, whichever carrier it runs on. The
     * counters of a key are an instance of this class (fields calls, selfNs,
     * totalNs), made before the key is handed out and never moved, so no add
     * is lost to a copy; the directory of their chunks is what grows. */
    private static final int CHUNK_BITS = 10, CHUNK_MASK = (1 << CHUNK_BITS) - 1;
    static final int CALLS = 0, SELF = 1, TOTAL = 2;
    private long calls, selfNs, totalNs;
    private static final long CALLS_AT = U.objectFieldOffset(HprofTracker.class, "calls");
    private static final long SELF_AT = U.objectFieldOffset(HprofTracker.class, "selfNs");
    private static final long TOTAL_AT = U.objectFieldOffset(HprofTracker.class, "totalNs");
    private static volatile HprofTracker[][] sharedCounters = new HprofTracker[16][];
    static {
        makeSharedCounters(UNNAMED);
        makeSharedCounters(FULL);
    }

    /* Key k's counters. NAMES held (or class initialisation). */
    private static void makeSharedCounters(int k) {
        HprofTracker[][] dir = sharedCounters;
        int c = k >>> CHUNK_BITS;
        if (c >= dir.length) {
            HprofTracker[][] bigger = new HprofTracker[dir.length * 2][];
            System.arraycopy(dir, 0, bigger, 0, dir.length);
            dir = bigger;
        }
        if (dir[c] == null) dir[c] = new HprofTracker[1 << CHUNK_BITS];
        dir[c][k & CHUNK_MASK] = new HprofTracker();
        sharedCounters = dir;                  /* volatile: published before key k is handed out */
    }

    private static HprofTracker counters(int key) {
        HprofTracker[] chunk = sharedCounters[key >>> CHUNK_BITS];
        HprofTracker c = chunk == null ? null : chunk[key & CHUNK_MASK];
        if (c != null) return c;
        /* Not seen yet on this thread (the key came through the pairs
         * cache, a plain read): the lock orders it after its making. */
        lock(NAMES_LOCK);
        try {
            return sharedCounters[key >>> CHUNK_BITS][key & CHUNK_MASK];
        } finally {
            unlock(NAMES_LOCK);
        }
    }

    static void sharedAdd(int key, int what, long v) {
        U.getAndAddLong(counters(key), what == CALLS ? CALLS_AT : what == SELF ? SELF_AT : TOTAL_AT, v);
    }

    /* (caller's shared key, callee id) -> callee's shared key, as each
     * state's pairs cache (see HprofThreadState.keyOf) but for all virtual
     * threads. An entry is one long, so a reader sees it whole: caller + 1
     * in bits 0-20, the id in bits 21-42, key + 1 in bits 43-63 (0: empty).
     * Ids of 22 bits or more are not cached. Grown (emptied) as keys are
     * added. */
    private static volatile long[] sharedPairs = new long[1 << 12];
    private static final int MAX_SHARED_PAIRS = 1 << 16;

    /** The shared key of frame p of s (a virtual thread's state, thread=n):
     *  its caller's key `parent` (-1 at the bottom) and its own id. */
    static int sharedKeyOf(HprofThreadState s, int parent, int id) {
        long[] pc = sharedPairs;
        int h = parent * 0x9E3779B1 ^ id * 0x85EBCA6B;
        h ^= h >>> 16;
        int i = h & (pc.length - 1);
        long tag = (parent + 1) | (long) id << 21;
        long e = pc[i];
        if ((e & ((1L << 43) - 1)) == tag && e != 0 && id >>> 22 == 0) return (int) (e >>> 43) - 1;
        int k = s.sharedLookup();
        /* Only a real key's callee has one key whatever the stack below.
         * UNNAMED is kept: such keys are made where the thread's stack
         * cannot be walked as its own (the JDK's code around a virtual
         * thread's mounts, trace()), so they would be walked for in vain
         * by every virtual thread (13 walks each in VThreadBench). Their
         * calls are left out of the profile, as they were before. */
        if (parent == UNNAMED || parent == FULL || id >>> 22 != 0) return k;
        if (names > 2 * pc.length && pc.length < MAX_SHARED_PAIRS) {
            sharedPairs = new long[pc.length * 4];
            return k;
        }
        pc[i] = tag | (long) (k + 1) << 43;
        return k;
    }

    /* thread=n: the shared counters as [serial, calls, self, total] from
     * out[0] on, open calls of the virtual threads added; keys without a
     * count left out. The number of longs used. TABLE_LOCK held. */
    private static int sharedSnapshot(long[] out, int shared, int[] serials, HprofThreadState[] tab) {
        HprofTracker[][] dir = sharedCounters;
        for (int a = 0; a < shared; a++) {
            HprofTracker c = dir[a >>> CHUNK_BITS][a & CHUNK_MASK];
            int o = HprofThreadState.SNAPSHOT_WIDTH * a;
            out[o] = serials[a];
            out[o + 1] = U.getLongVolatile(c, CALLS_AT);
            out[o + 2] = U.getLongVolatile(c, SELF_AT);
            out[o + 3] = U.getLongVolatile(c, TOTAL_AT);
        }
        for (HprofThreadState s : tab)
            if (s != null && s != TOMBSTONE && s.shared) s.addOpenCalls(out, 0, shared, s.lastCpu);
        int k = 0;
        for (int o = 0; o < HprofThreadState.SNAPSHOT_WIDTH * shared; o += HprofThreadState.SNAPSHOT_WIDTH) {
            if (out[o + 1] == 0 && out[o + 2] == 0 && out[o + 3] == 0) continue;
            for (int j = 0; j < HprofThreadState.SNAPSHOT_WIDTH; j++) out[k + j] = out[o + j];
            k += HprofThreadState.SNAPSHOT_WIDTH;
        }
        return k;
    }

    /* Natives, registered by the agent when it defines this class. */
    /** Sets up the calling thread: info[0] = address of its perf_event
     *  page (0 if none), info[1] = its kernel thread id, info[2] = 1 if it
     *  is one of the JVM's service threads, info[3] = 1 if it is a virtual
     *  thread timed by its own clock, info[4] = the address of the CPU ns
     *  it lent, as a carrier, to virtual threads (0 if none). False: not now. */
    private static native boolean register(Thread t, long[] info);
    /** CPU time of the calling thread, ns (CLOCK_THREAD_CPUTIME_ID). */
    static native long cpuTime();
    /** Virtual thread t's own CPU time, ns (its carriers' while it was
     *  mounted), read on t; -1 while JVMTI does not see it alive. */
    static native long virtualCpuTime(Thread t);
    /** CPU time of thread `tid` of this process, ns. */
    static native long cpuTimeOf(int tid);
    /** sched_yield(): a spinning lock() gives the CPU to the lock's holder. */
    private static native void yieldCpu();
    /** The trace serial of the calling thread's stack (tracker frames
     *  skipped), t being Thread.currentThread(); 0 where JVMTI sees another
     *  thread (a virtual thread's carrier, around its mounts). */
    static native int trace(Thread t);
    /** The key of [unwalkable].tracker_keys_full: a thread's keys are full. */
    static native int keysFullTrace();
    /** heap=sites: record one allocation (its site, and a weak reference to see it die). */
    static native void allocated(Object o, Class<?> c, int classHash, int above);
    /** A finished thread's totals. */
    private static native void retire(int[] serial, long[] count, long[] self, long[] total, int n, int tid);
}
