/*
 * One thread's shadow stack and counters for cpu=times (see HprofTracker).
 * Only its own thread writes it; the agent reads it, racily, for reports.
 *
 * Time is the thread's CPU time, read cheaply: the kernel rewrites the
 * thread's perf_event page (its `lock` word) each time the thread is
 * scheduled in. While that word is unchanged the thread has stayed on the
 * CPU since the last exact reading, so CPU time = that reading + the wall
 * time since (System.nanoTime, no system call). When it has changed, one
 * exact reading (a native call) is taken. Without a page, every reading is
 * exact (slow, but correct).
 */
package java.lang;

import jdk.internal.misc.Unsafe;

final class HprofThreadState {
    private static final Unsafe U = Unsafe.getUnsafe();
    private static final int MAX_DEPTH = 1 << 22;
    private static final int MAX_KEYS = 1 << 20;
    /* Key ids kept, all keys together (64 MB): with whole stacks (depth 256)
     * a key is as long as its stack, so the keys are stored end to end. */
    private static final int MAX_KEY_IDS = 1 << 24;

    final Thread thread;
    final long page;
    final int tid;
    final int depth;
    /* One of the JVM's service threads (system thread group: Reference
     * Handler, Finalizer, ...; Common-Cleaner): the JDK's own methods (id
     * bit 1) are not recorded on it, neither counted nor timed, so that it
     * keeps its pace (a Finalizer thread timing ReferenceQueue.remove,
     * Finalizer.runFinalizer, ... for every finalizable object fell behind
     * the program and the heap grew). The user's methods it runs
     * (finalize(), Cleaner actions) are counted and timed as anywhere; their
     * keys hold only the user's frames, their time includes the JDK's
     * callees. */
    final boolean service;
    /* A virtual thread: its time is its own clock's (the carriers' CPU time
     * while it was mounted, kept by the agent), not the carrier's page, which
     * counts the other virtual threads the carrier ran. lastCpu: its last
     * reading, for snapshots (taken on another thread). */
    final boolean virtual;
    volatile long lastCpu;
    /* A carrier of virtual threads: the address of the CPU ns it spent running
     * them (the agent adds each mount's at its unmount), which its own clock
     * leaves out. 0 for other threads. */
    final long lent;
    /* A virtual thread with thread=n: its frames' keys are shared keys, its
     * counts go to the shared counters (see HprofTracker.sharedKeyOf); it
     * has no accumulators of its own. */
    final boolean shared;
    /* jdk=boundary: a call of the JDK's (id bit 1) made from a JDK frame is
     * not recorded: that frame counts it in jdkOpen[] instead of pushing a
     * frame, and its exit takes it back. So a JDK method called by the
     * user's code is one row, timed with all the JDK's work below it (the
     * user's callbacks under it still get frames of their own). A user's
     * method only counted (countOnly) pushes no frame either: userOpen[]
     * of the frame on top says one is running, so that the JDK calls it
     * makes are seen as made from outside the JDK. */
    final boolean boundary;

    /* shadow stack */
    int epoch;                         /* HprofTracker.engaged when it was last used */
    int sp;
    int overflow;                      /* frames beyond MAX_DEPTH, not tracked */
    /* Small at first, grown as needed: a virtual thread has a state each,
     * and most run one short task (100,000 of them at 6 KB each made the
     * heap grow by hundreds of MB). */
    int[] ids = new int[16];
    long[] start = new long[16];       /* CPU ns at entry */
    long[] child = new long[16];       /* CPU ns of finished callees */
    boolean[] timedCallee = new boolean[16];   /* a callee of this frame was timed */
    int[] acc = new int[16];           /* accumulator of the frame's key */
    /* jdk=boundary only (null otherwise: a virtual thread has a state each) */
    int[] jdkOpen;                     /* JDK calls open inside this JDK frame */
    int[] userOpen;                    /* counted calls of the user's open above it */

    /* accumulators: one per key (the ids of the top `depth` frames); none
     * when shared */
    int nacc;
    boolean full;                      /* MAX_KEYS or MAX_KEY_IDS reached: new keys fold into fullAcc */
    int fullAcc;                       /* the accumulator of [unwalkable].tracker_keys_full */
    int[] keyLen;
    int[] keyStart;                    /* key a is keys[keyStart[a] .. + keyLen[a]) */
    int keyUsed;
    int[] keys;
    int[] serial;
    long[] count;
    long[] self;
    long[] total;                      /* CPU ns, callees included (cpu=old's time) */
    int[] index;                       /* open addressing: accumulator + 1, 0 = empty */
    /* keyOf's cache: [caller's accumulator, callee id, accumulator + 1] per
     * slot (0: empty), up to MAX_PAIRS slots (384 KB). */
    private static final int MAX_PAIRS = 1 << 15;
    private int[] pairs;

    /* clock */
    private int seq;
    private long anchorCpu, anchorWall;

    HprofThreadState(Thread thread, long page, int tid, int depth, boolean service, boolean virtual, long lent) {
        this.thread = thread;
        this.lent = lent;
        this.service = service;
        this.virtual = virtual;
        this.page = page;
        this.tid = tid;
        this.depth = depth < 1 ? 1 : depth;
        this.seq = -1;
        this.shared = virtual && HprofTracker.shareNames;
        this.boundary = HprofTracker.jdkBoundary;
        if (boundary) { jdkOpen = new int[16]; userOpen = new int[16]; }
        if (!shared) {
            keyLen = new int[8]; keyStart = new int[8]; keys = new int[32]; serial = new int[8];
            count = new long[8]; self = new long[8]; total = new long[8];
            index = new int[16]; pairs = new int[3 * 16];
        }
    }

    /* Where JVMTI does not see the virtual thread (the JDK's code around its
     * start and end), its clock stands still. */
    long virtualNow() {
        long c = HprofTracker.virtualCpuTime(thread);
        if (c >= 0) lastCpu = c;
        return lastCpu;
    }

    /** This thread's CPU time now, ns: on this thread only. */
    long now() {
        if (virtual) return virtualNow();
        return lent == 0 ? ownNow() : ownNow() - U.getLongVolatile(null, lent);
    }

    private long ownNow() {
        long wall = System.nanoTime();
        if (page != 0 && U.getIntVolatile(null, page + 8) == seq)
            return anchorCpu + (wall - anchorWall);
        /* Read the word first: a switch after it changes the word again. */
        int q = page != 0 ? U.getIntVolatile(null, page + 8) : -1;
        anchorCpu = HprofTracker.cpuTime();
        anchorWall = System.nanoTime();
        seq = (q & 1) == 0 ? q : q + 1000;   /* odd: mid-update, so don't trust it */
        return anchorCpu;
    }

    /** jdk=boundary: is the JDK running now, called by the JDK? The frame on
     *  top is the JDK's and no counted method of the user's runs above it.
     *  (Not while frames beyond MAX_DEPTH are open: overflow counts those.) */
    private boolean insideJdk() {
        int p = sp - 1;
        return p >= 0 && overflow == 0 && (ids[p] & 2) != 0 && userOpen[p] == 0;
    }

    void enter(int id) {
        if (service && (id & 2) != 0) return;
        /* Before countOnly: the exit makes the same choice. */
        if (boundary && (id & 2) != 0 && insideJdk()) { jdkOpen[sp - 1]++; return; }
        if ((id & 1) != 0 && HprofTracker.countOnly(id)) {
            count(id);
            if (boundary && (id & 2) == 0 && sp > 0 && overflow == 0) userOpen[sp - 1]++;
            return;
        }
        long t = now();
        int p = sp;
        if (p == ids.length) {
            if (p >= MAX_DEPTH) { overflow++; return; }
            growStack();
        }
        ids[p] = id;
        start[p] = t;
        child[p] = 0;
        timedCallee[p] = false;
        if (boundary) { jdkOpen[p] = 0; userOpen[p] = 0; }
        sp = p + 1;
        int a = keyOf(p, id);
        acc[p] = a;
        countCall(a);
    }

    /** A call of leaf method `id`, counted under the key it would have on
     *  top of this stack; its time stays with the caller. */
    void count(int id) {
        if (overflow > 0 || (service && (id & 2) != 0)) return;
        if (boundary && (id & 2) != 0 && insideJdk()) return;
        int p = sp;
        if (p == ids.length) {
            if (p >= MAX_DEPTH) return;
            growStack();
        }
        ids[p] = id;
        sp = p + 1;
        int a = keyOf(p, id);
        sp = p;
        countCall(a);
    }

    private void countCall(int a) {
        if (shared) HprofTracker.sharedAdd(a, HprofTracker.CALLS, 1);
        else count[a]++;
    }

    void exit(int id) {
        if (service && (id & 2) != 0) return;
        /* The JDK running inside the JDK, with JDK calls open: this is the
         * exit of the last of them (a frame or a counted method of the
         * user's would be on top otherwise). */
        if (boundary && (id & 2) != 0 && insideJdk() && jdkOpen[sp - 1] > 0) {
            jdkOpen[sp - 1]--;
            return;
        }
        boolean counted = (id & 1) != 0 && HprofTracker.countOnly(id);
        if (overflow > 0) { if (!counted) overflow--; return; }
        int p = sp - 1;
        if (p >= 0 && ids[p] == id) { pop(now()); return; }
        if (counted && boundary && (id & 2) == 0 && p >= 0 && userOpen[p] > 0) userOpen[p]--;
        if (counted || p < 0) return;     /* a counted call's exit, or nothing to end */
        /* Exits we missed (a frame left by an exception no handler of ours
         * could see, e.g. thrown by super(...)), or a method entered before
         * tracking started: unwind to the frame, if it is there. */
        int k = p - 1;
        while (k >= 0 && ids[k] != id) k--;
        if (k < 0) return;
        long t = now();
        while (sp > k) pop(t);
    }

    private void pop(long t) {
        int p = --sp;
        long elapsed = t - start[p];
        if (elapsed < 0) elapsed = 0;
        long own = elapsed - child[p];
        if (shared) {
            if (own > 0) HprofTracker.sharedAdd(acc[p], HprofTracker.SELF, own);
            HprofTracker.sharedAdd(acc[p], HprofTracker.TOTAL, elapsed);
        } else {
            self[acc[p]] += own < 0 ? 0 : own;
            total[acc[p]] += elapsed;
        }
        if (p > 0) { child[p - 1] += elapsed; timedCallee[p - 1] = true; }
        int id = ids[p];
        if ((id & 1) != 0) HprofTracker.learnFrom(id, elapsed, timedCallee[p]);
    }

    /** The accumulator of the key of frame p (ids[p] == id, sp == p + 1);
     *  when shared, its shared key (HprofTracker.sharedKeyOf, the same cache
     *  for all virtual threads).
     *  A callee's key is a function of its caller's key and its own id, so a
     *  direct-mapped cache of (caller's accumulator, id) pairs answers nearly
     *  every call with one probe, where lookup() hashes `depth` ids and reads
     *  an index, a key and its length in tables of megabytes (javac: 97,000
     *  keys). It replaced 4 callee slots per frame, which missed whenever a
     *  frame called more than a few methods: cpu=times on javac 5.1x -> 3.8x
     *  CPU, CallBench 8.4x -> 6.2x (bench/run, no agent = 1). */
    private int keyOf(int p, int id) {
        int parent = p > 0 ? acc[p - 1] : -1;
        if (shared) return HprofTracker.sharedKeyOf(this, parent, id);
        if (full) return lookup();   /* new keys fold into fullAcc: its pairs would lie */
        int[] pc = pairs;
        int slots = pc.length / 3;
        int h = parent * 0x9E3779B1 ^ id * 0x85EBCA6B;
        h ^= h >>> 16;
        int b = 3 * (h & (slots - 1));
        if (pc[b] == parent && pc[b + 1] == id && pc[b + 2] != 0) return pc[b + 2] - 1;
        int a = lookup();
        if (full) return a;
        if (nacc > 2 * slots && slots < MAX_PAIRS) {   /* grows with the keys: small for most threads */
            slots *= 4;
            pc = pairs = new int[3 * slots];
            b = 3 * (h & (slots - 1));
        }
        pc[b] = parent; pc[b + 1] = id; pc[b + 2] = a + 1;
        return a;
    }

    /** The shared key of the top frame's stack (shared). */
    int sharedLookup() {
        int n = sp < depth ? sp : depth;
        int top = sp - 1;
        int[] key = new int[n];
        for (int k = 0; k < n; k++) key[k] = ids[top - k];
        return HprofTracker.sharedKey(thread, key, 0, n);
    }

    private int lookup() {
        int n = sp < depth ? sp : depth;
        int top = sp - 1;
        int h = n;
        for (int k = 0; k < n; k++) h = h * 0x9E3779B1 + ids[top - k];
        h ^= h >>> 15;
        int mask = index.length - 1;
        for (int i = h & mask; ; i = (i + 1) & mask) {
            int e = index[i];
            if (e == 0) return add(i, n);
            int a = e - 1;
            if (keyLen[a] != n) continue;
            int base = keyStart[a];
            int k = 0;
            while (k < n && keys[base + k] == ids[top - k]) k++;
            if (k == n) return a;
        }
    }

    private int add(int slot, int n) {
        if (full || nacc >= MAX_KEYS || keyUsed > MAX_KEY_IDS - n) return keysFull();
        if (keyUsed + n > keys.length) {
            int size = keys.length * 2;
            while (size < keyUsed + n) size *= 2;
            keys = copy(keys, size);
        }
        int a = nacc++;
        if (a == serial.length) growAccumulators();
        keyLen[a] = n;
        keyStart[a] = keyUsed;
        int base = keyUsed, top = sp - 1;
        keyUsed += n;
        for (int k = 0; k < n; k++) keys[base + k] = ids[top - k];
        serial[a] = HprofTracker.trace(thread);
        index[slot] = a + 1;
        if (nacc * 2 > index.length) rehash();
        return a;
    }

    /** Out of key space: calls of stacks not seen before are counted under
     *  one key of their own, whose TRACE is the pseudo method
     *  [unwalkable].tracker_keys_full (the agent says so on stderr), never
     *  under another stack's key. Keys already made go on counting exactly. */
    private int keysFull() {
        if (!full) {
            full = true;
            int a = nacc++;
            if (a == serial.length) growAccumulators();
            keyLen[a] = 0;
            keyStart[a] = keyUsed;
            serial[a] = HprofTracker.keysFullTrace();
            fullAcc = a;
        }
        return fullAcc;
    }

    private void rehash() {
        int[] bigger = new int[index.length * 2];
        int mask = bigger.length - 1;
        for (int a = 0; a < nacc; a++) {
            int n = keyLen[a], base = keyStart[a], h = n;
            for (int k = 0; k < n; k++) h = h * 0x9E3779B1 + keys[base + k];
            h ^= h >>> 15;
            int i = h & mask;
            while (bigger[i] != 0) i = (i + 1) & mask;
            bigger[i] = a + 1;
        }
        index = bigger;
    }

    private void growStack() {
        int n = ids.length * 2;
        ids = copy(ids, n); acc = copy(acc, n);
        if (boundary) { jdkOpen = copy(jdkOpen, n); userOpen = copy(userOpen, n); }
        start = copy(start, n); child = copy(child, n);
        boolean[] tc = new boolean[n];
        System.arraycopy(timedCallee, 0, tc, 0, timedCallee.length);
        timedCallee = tc;
    }

    private void growAccumulators() {
        int n = serial.length * 2;
        keyLen = copy(keyLen, n); keyStart = copy(keyStart, n); serial = copy(serial, n);
        count = copy(count, n); self = copy(self, n); total = copy(total, n);
    }

    private static int[] copy(int[] a, int n) { int[] b = new int[n]; System.arraycopy(a, 0, b, 0, a.length); return b; }
    private static long[] copy(long[] a, int n) { long[] b = new long[n]; System.arraycopy(a, 0, b, 0, a.length); return b; }

    /** At thread end: calls still open (the thread died in them) end now. */
    void closeOpenFrames(long now) {
        while (sp > 0) pop(now);
    }

    /** Appends [serial, calls, self ns, total ns] per key (SNAPSHOT_WIDTH
     *  longs); open calls count up to `now`. Runs on another thread while
     *  this one runs: read each array once and check every index. */
    static final int SNAPSHOT_WIDTH = 4;

    int snapshotInto(long[] out, int k, long now) {
        int n = nacc;
        int[] ser = serial; long[] cnt = count; long[] slf = self; long[] tot = total;
        if (n > ser.length) n = ser.length;   /* no Math.min: it is instrumented */
        if (n > cnt.length) n = cnt.length;
        if (n > slf.length) n = slf.length;
        if (n > tot.length) n = tot.length;
        int base = k;
        for (int a = 0; a < n && k + SNAPSHOT_WIDTH <= out.length; a++) {
            out[k++] = ser[a]; out[k++] = cnt[a]; out[k++] = slf[a]; out[k++] = tot[a];
        }
        addOpenCalls(out, base, (k - base) / SNAPSHOT_WIDTH, now);
        return k;
    }

    /** Adds the calls open now to the accumulators' [serial, calls, self,
     *  total] rows at out[base ..], of which there are n (for shared states,
     *  the shared keys'): each counts up to `now`. Racy as snapshotInto. */
    void addOpenCalls(long[] out, int base, int n, long now) {
        int depthNow = sp;
        int[] accs = acc; long[] st = start; long[] ch = child;
        if (depthNow > accs.length || depthNow > st.length || depthNow > ch.length) return;
        for (int p = 0; p < depthNow; p++) {
            long end = p + 1 < depthNow ? st[p + 1] : now;
            long own = end - st[p] - ch[p];
            long open = now - st[p];
            int a = accs[p];
            if (a < 0 || a >= n || base + SNAPSHOT_WIDTH * a + 3 >= out.length) continue;
            if (own > 0) out[base + SNAPSHOT_WIDTH * a + 2] += own;
            if (open > 0) out[base + SNAPSHOT_WIDTH * a + 3] += open;
        }
    }
}
