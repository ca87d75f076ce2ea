/* Unit tests: the object store of heap=sites (object_store.h), with fake
 * handles whose objects the test kills. */
#include "unit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "heap/object_store.h"

/* 8-byte aligned, as HotSpot's weak handles are: one chunk's handles share
 * their low 3 bits (a handle with others starts a chunk), so the chunk
 * counts these tests expect hold only for aligned handles. */
typedef struct fake_object {
    _Alignas(8) atomic_int alive;
    atomic_int released;    /* times its handle was released */
    subsite_t  subsite;
} fake_object;

static int fake_dead(void *ctx, void *handle)
{
    (void)ctx;
    return !atomic_load(&((fake_object *)handle)->alive);
}

static void fake_release(void *ctx, void *handle)
{
    atomic_fetch_add((atomic_int *)ctx, 1);
    atomic_fetch_add(&((fake_object *)handle)->released, 1);
}

static atomic_int releases;
static const object_store_ops fake_ops = { fake_dead, fake_release };

typedef struct census {
    size_t visited, wrong_subsite, dead_visited;
} census;

static void count_visit(void *arg, void *handle, subsite_t s)
{
    census *c = arg;
    fake_object *o = handle;
    c->visited++;
    c->wrong_subsite += o->subsite != s;
    c->dead_visited += !atomic_load(&o->alive);
}

static fake_object *fakes(size_t n)
{
    fake_object *o = calloc(n, sizeof *o);
    for (size_t i = 0; i < n; i++) {
        atomic_init(&o[i].alive, 1);
        o[i].subsite = (subsite_t)(i % 97 + 1);
    }
    return o;
}

static census take_census(void)
{
    census c = { 0, 0, 0 };
    object_store_each(&fake_ops, &releases, count_visit, &c);
    return c;
}

TEST(object_store_census_sees_every_live_entry)
{
    enum { N = 5000 };                      /* two chunks, the second part full */
    fake_object *o = fakes(N);
    for (size_t i = 0; i < N; i++)
        CHECK(object_store_add(&fake_ops, &releases, &o[i], o[i].subsite) == 0);
    object_store_stats st = object_store_stats_now();
    size_t retired = st.young_entries;
    CHECK(st.entries == N && retired > 0 && retired < N);
    census c = take_census();
    CHECK(c.visited == N && c.wrong_subsite == 0);
    for (size_t i = 0; i < N; i += 2)
        atomic_store(&o[i].alive, 0);
    c = take_census();
    CHECK(c.visited == N / 2 && c.dead_visited == 0 && c.wrong_subsite == 0);
    /* The dead ones in retired chunks were released, once each; those in
     * the chunk still being filled wait for it to be retired. */
    size_t released = 0, twice = 0, live_released = 0;
    for (size_t i = 0; i < N; i++) {
        int r = atomic_load(&o[i].released);
        released += r != 0;
        twice += r > 1;
        live_released += r && atomic_load(&o[i].alive);
    }
    CHECK(released == (retired + 1) / 2 && twice == 0 && live_released == 0);
    object_store_free(&fake_ops, &releases);
    for (size_t i = 0; i < N; i++)
        CHECK(atomic_load(&o[i].released) == 1);
    CHECK(object_store_stats_now().chunks == 0);
    free(o);
}

TEST(object_store_sweeps_only_chunks_retired_before_a_gc)
{
    enum { N = 20000, HALF = N / 2 };
    fake_object *o = fakes(N);
    for (size_t i = 0; i < HALF; i++)
        object_store_add(&fake_ops, &releases, &o[i], o[i].subsite);
    object_store_thread_end();              /* all retired */
    for (size_t i = 0; i < N; i++)
        atomic_store(&o[i].alive, 0);
    /* No GC since they were retired: a weak handle cannot have changed. */
    CHECK(object_store_sweep(&fake_ops, &releases) == 0);
    object_store_gc_done();
    CHECK(object_store_sweep(&fake_ops, &releases) == HALF);
    CHECK(object_store_stats_now().young_entries == 0);
    /* Chunks retired after that GC wait for the next one. */
    for (size_t i = HALF; i < N; i++)
        object_store_add(&fake_ops, &releases, &o[i], o[i].subsite);
    object_store_thread_end();
    CHECK(object_store_sweep(&fake_ops, &releases) == 0);
    CHECK(object_store_stats_now().young_entries == N - HALF);
    object_store_gc_done();
    CHECK(object_store_sweep(&fake_ops, &releases) == N - HALF);
    object_store_free(&fake_ops, &releases);
    for (size_t i = 0; i < N; i++)
        CHECK(atomic_load(&o[i].released) == 1);
    free(o);
}

TEST(object_store_packs_survivors_densely)
{
    /* 1% survive each young sweep: the old entries fill few chunks. */
    enum { N = 409600 };
    fake_object *o = fakes(N);
    for (size_t i = 0; i < N; i++) {
        object_store_add(&fake_ops, &releases, &o[i], o[i].subsite);
        if (i % 100)
            atomic_store(&o[i].alive, 0);
    }
    object_store_gc_done();
    object_store_sweep(&fake_ops, &releases);
    object_store_stats st = object_store_stats_now();
    CHECK(st.young_entries == 0);
    /* 4,096 survivors packed in 2 chunks (about 3 bytes each), plus the
     * active one; the 409,600 entries took 100 chunks. */
    CHECK(st.chunks <= 4);
    census c = take_census();
    CHECK(c.visited == N / 100 && c.dead_visited == 0);
    object_store_free(&fake_ops, &releases);
    free(o);
}

static int dead_of_subsite_1(void *ctx, void *handle, subsite_t s)
{
    return s == 1 && fake_dead(ctx, handle);
}

TEST(object_store_recent_finds_only_the_last_entries)
{
    fake_object *o = fakes(10);
    for (size_t i = 0; i < 10; i++)
        object_store_add(&fake_ops, &releases, &o[i], 1);
    CHECK(object_store_recent(dead_of_subsite_1, NULL, 3) == 0);      /* all alive: no match */
    atomic_store(&o[8].alive, 0);
    CHECK(object_store_recent(dead_of_subsite_1, NULL, 3) == 1);
    CHECK(object_store_recent(dead_of_subsite_1, NULL, 1) == 0);      /* o[9] only */
    atomic_store(&o[8].alive, 1);
    atomic_store(&o[2].alive, 0);
    CHECK(object_store_recent(dead_of_subsite_1, NULL, 7) == 0);
    CHECK(object_store_recent(dead_of_subsite_1, NULL, 8) == 1);
    object_store_add(&fake_ops, &releases, &o[0], 2);
    atomic_store(&o[0].alive, 0);
    CHECK(object_store_recent(dead_of_subsite_1, NULL, 1) == 0);  /* the subsite is given */
    object_store_free(&fake_ops, &releases);
    free(o);
}

TEST(object_store_clear_releases_all_but_active_chunks)
{
    enum { N = 10000 };
    fake_object *o = fakes(N);
    for (size_t i = 0; i < N; i++)
        object_store_add(&fake_ops, &releases, &o[i], o[i].subsite);
    object_store_gc_done();
    object_store_sweep(&fake_ops, &releases);           /* some old, some active */
    object_store_clear(&fake_ops, &releases);
    size_t released = 0, twice = 0;
    for (size_t i = 0; i < N; i++) {
        released += atomic_load(&o[i].released) == 1;
        twice += atomic_load(&o[i].released) > 1;
    }
    census c = take_census();
    CHECK(released > 0 && c.visited > 0 && released + c.visited == N && twice == 0);
    object_store_free(&fake_ops, &releases);
    free(o);
}

/* The last `max` entries, past the marks the thread keeps every 256. */
TEST(object_store_recent_reads_from_the_marks)
{
    enum { N = 3000 };                       /* one chunk */
    fake_object *o = fakes(N);
    for (size_t i = 0; i < N; i++)
        object_store_add(&fake_ops, &releases, &o[i], 1);
    CHECK(object_store_stats_now().young_entries == 0);
    atomic_store(&o[N - 300].alive, 0);
    CHECK(object_store_recent(dead_of_subsite_1, NULL, 300) == 1);
    CHECK(object_store_recent(dead_of_subsite_1, NULL, 299) == 0);
    atomic_store(&o[N - 300].alive, 1);
    atomic_store(&o[N - 601].alive, 0);
    CHECK(object_store_recent(dead_of_subsite_1, NULL, 600) == 0);
    CHECK(object_store_recent(dead_of_subsite_1, NULL, 601) == 1);
    CHECK(object_store_recent(dead_of_subsite_1, NULL, N) == 1);
    object_store_free(&fake_ops, &releases);
    free(o);
}

/* Threads add and die while the main thread sweeps after "GCs" and takes
 * censuses: no entry lost, none released twice, none alive released. */
enum { THREADS = 4, PER_THREAD = 60000 };

static void *adder(void *arg)
{
    fake_object *o = arg;
    for (size_t i = 0; i < PER_THREAD; i++) {
        if (object_store_add(&fake_ops, &releases, &o[i], o[i].subsite) != 0)
            return NULL;
        if (i >= 10 && i % 3)
            atomic_store(&o[i - 10].alive, 0);     /* dies a little after its allocation */
    }
    object_store_thread_end();
    return o;
}

TEST(object_store_threads_add_while_the_store_is_swept)
{
    fake_object *o = fakes((size_t)THREADS * PER_THREAD);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, adder, &o[(size_t)i * PER_THREAD]);
    for (int k = 0; k < 200; k++) {
        object_store_gc_done();
        object_store_sweep(&fake_ops, &releases);
        if (k % 50 == 0) {
            /* Not dead_visited: here objects die at any time, during the
             * census too (after it released the dead), where in the JVM
             * they die only in a GC and the census follows one. The
             * quiet census at the end checks it. */
            census c = take_census();
            CHECK(c.wrong_subsite == 0);
        }
    }
    int all_added = 1;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        all_added &= r != NULL;
    }
    CHECK(all_added);
    object_store_gc_done();
    object_store_sweep(&fake_ops, &releases);
    size_t alive = 0, bad = 0;
    for (size_t i = 0; i < (size_t)THREADS * PER_THREAD; i++) {
        int a = atomic_load(&o[i].alive), r = atomic_load(&o[i].released);
        alive += a;
        bad += (a && r) || r > 1;
    }
    census c = take_census();
    CHECK(bad == 0);
    CHECK(c.visited == alive && c.dead_visited == 0 && c.wrong_subsite == 0);
    CHECK(object_store_stats_now().entries == alive);     /* ended threads' chunks swept too */
    object_store_free(&fake_ops, &releases);
    for (size_t i = 0; i < (size_t)THREADS * PER_THREAD; i++)
        bad += atomic_load(&o[i].released) != 1;
    CHECK(bad == 0);
    free(o);
}

/* Handles anywhere (random high bits, far apart either way) and subsites
 * anywhere, some with other low bits (which start a chunk of their own);
 * rounds of adding, dying and sweeping, packing survivors in place: every
 * entry comes back as it went in. Made-up handles: the ops find their
 * object by the handle's bits 4-23. */
enum { FAR = 200000 };
static fake_object far_objects[FAR];

static fake_object *far_object(void *handle)
{
    return &far_objects[((uintptr_t)handle >> 4) & 0xfffff];
}

static int far_dead(void *ctx, void *handle)
{
    (void)ctx;
    return !atomic_load(&far_object(handle)->alive);
}

static void far_release(void *ctx, void *handle)
{
    (void)ctx;
    atomic_fetch_add(&far_object(handle)->released, 1);
}

static void far_visit(void *arg, void *handle, subsite_t s)
{
    census *c = arg;
    fake_object *o = far_object(handle);
    c->visited++;
    c->wrong_subsite += o->subsite != s;
    c->dead_visited += !atomic_load(&o->alive);
}

static uint64_t far_random(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

TEST(object_store_keeps_any_handle_and_subsite)
{
    static const object_store_ops far_ops = { far_dead, far_release };
    uint64_t x = 88172645463325252u;
    size_t added = 0;
    for (int round = 0; round < 4; round++) {
        for (size_t i = added; i < added + FAR / 4; i++) {
            fake_object *o = &far_objects[i];
            atomic_init(&o->alive, 1);
            atomic_init(&o->released, 0);
            uint64_t r = far_random(&x);
            /* Runs of nearby handles and subsites, and jumps. */
            o->subsite = r % 3 ? (subsite_t)(i / 7 + 1) : (subsite_t)(far_random(&x) | 1);
            uintptr_t high = r % 5 ? (uintptr_t)(i / 50) << 24 : (uintptr_t)(far_random(&x) & 0x3fffffff) << 24;
            uintptr_t h = high | (uintptr_t)i << 4 | (r % 50 == 0 ? 5 : 1);
            CHECK(object_store_add(&far_ops, NULL, (void *)h, o->subsite) == 0);
        }
        added += FAR / 4;
        for (size_t i = 0; i < added; i++)
            if (far_random(&x) % 10 < 7)
                atomic_store(&far_objects[i].alive, 0);
        object_store_thread_end();
        object_store_gc_done();
        object_store_sweep(&far_ops, NULL);
        census c = { 0, 0, 0 };
        object_store_each(&far_ops, NULL, far_visit, &c);
        size_t alive = 0, bad = 0;
        for (size_t i = 0; i < added; i++) {
            int a = atomic_load(&far_objects[i].alive), r = atomic_load(&far_objects[i].released);
            alive += a;
            bad += a ? r != 0 : r != 1;
        }
        CHECK(alive > 0 && c.visited == alive && c.dead_visited == 0 && c.wrong_subsite == 0 && bad == 0);
        CHECK(object_store_stats_now().entries == alive);
    }
    object_store_free(&far_ops, NULL);
    size_t bad = 0;
    for (size_t i = 0; i < FAR; i++)
        bad += atomic_load(&far_objects[i].released) != 1;
    CHECK(bad == 0);
    CHECK(object_store_stats_now().chunks == 0);
}
