/* Unit tests: the object store of heap=sites (object_store.h), with fake
 * handles whose objects the test kills. */
#include "unit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "heap/object_store.h"

/* 8-byte aligned, as HotSpot's weak handles are: the store keeps a handle
 * as an offset from its chunk's first one, in 8-byte units. */
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
    enum { N = 5000 };                      /* several chunks, the last one part full */
    fake_object *o = fakes(N);
    for (size_t i = 0; i < N; i++)
        CHECK(object_store_add(&fake_ops, &releases, &o[i], o[i].subsite) == 0);
    CHECK(object_store_stats_now().entries == N);
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
    CHECK(released == (N / OBJECT_STORE_CHUNK) * OBJECT_STORE_CHUNK / 2 && twice == 0 && live_released == 0);
    object_store_free(&fake_ops, &releases);
    for (size_t i = 0; i < N; i++)
        CHECK(atomic_load(&o[i].released) == 1);
    CHECK(object_store_stats_now().chunks == 0);
    free(o);
}

TEST(object_store_sweeps_only_chunks_retired_before_a_gc)
{
    enum { N = 4 * OBJECT_STORE_CHUNK + 1 };
    fake_object *o = fakes(N);
    for (size_t i = 0; i < 2 * OBJECT_STORE_CHUNK; i++)
        object_store_add(&fake_ops, &releases, &o[i], o[i].subsite);
    object_store_add(&fake_ops, &releases, &o[2 * OBJECT_STORE_CHUNK], 1);   /* retires the second */
    for (size_t i = 0; i < N; i++)
        atomic_store(&o[i].alive, 0);
    /* No GC since they were retired: a weak handle cannot have changed. */
    CHECK(object_store_sweep(&fake_ops, &releases) == 0);
    object_store_gc_done();
    CHECK(object_store_sweep(&fake_ops, &releases) == 2 * OBJECT_STORE_CHUNK);
    CHECK(object_store_stats_now().young_entries == 0);
    /* Chunks retired after that GC wait for the next one. */
    for (size_t i = 2 * OBJECT_STORE_CHUNK + 1; i < N; i++)
        object_store_add(&fake_ops, &releases, &o[i], o[i].subsite);
    CHECK(object_store_sweep(&fake_ops, &releases) == 0);
    CHECK(object_store_stats_now().young_entries == 2 * OBJECT_STORE_CHUNK);
    object_store_gc_done();
    CHECK(object_store_sweep(&fake_ops, &releases) == 2 * OBJECT_STORE_CHUNK);
    object_store_free(&fake_ops, &releases);
    for (size_t i = 0; i < N; i++)
        CHECK(atomic_load(&o[i].released) == 1);
    free(o);
}

TEST(object_store_packs_survivors_densely)
{
    /* 1% survive each young sweep: the old entries fill few chunks. */
    enum { N = 400 * OBJECT_STORE_CHUNK };
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
    /* 4,096 survivors packed in 4 chunks, plus the active one. */
    CHECK(st.chunks <= 6);
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
    enum { N = 3 * OBJECT_STORE_CHUNK + 10 };
    fake_object *o = fakes(N);
    for (size_t i = 0; i < N; i++)
        object_store_add(&fake_ops, &releases, &o[i], o[i].subsite);
    object_store_gc_done();
    object_store_sweep(&fake_ops, &releases);           /* some old, some young, some active */
    object_store_clear(&fake_ops, &releases);
    size_t released = 0;
    for (size_t i = 0; i < N; i++)
        released += atomic_load(&o[i].released) == 1;
    CHECK(released == 3 * OBJECT_STORE_CHUNK);
    CHECK(take_census().visited == 10);
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

/* Handles 2^40 bytes apart, or not 8-byte aligned, do not fit a chunk's
 * offsets: each starts a chunk of its own, and nothing is lost. Made-up
 * handles here: the ops find their object by the handle's low bits. */
enum { FAR = 600 };
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

TEST(object_store_keeps_handles_that_do_not_fit_an_offset)
{
    static const object_store_ops far_ops = { far_dead, far_release };
    for (size_t i = 0; i < FAR; i++) {
        atomic_init(&far_objects[i].alive, 1);
        atomic_init(&far_objects[i].released, 0);
        far_objects[i].subsite = (subsite_t)(i + 1);
        /* Three regions 2^40 apart, in turn; every fifth handle odd by 4. */
        uintptr_t h = ((uintptr_t)(i % 3) << 40) + ((uintptr_t)i << 4) + (i % 5 == 0 ? 4 : 0);
        CHECK(object_store_add(&far_ops, NULL, (void *)h, far_objects[i].subsite) == 0);
    }
    CHECK(object_store_stats_now().entries == FAR);
    for (size_t i = 0; i < FAR; i += 2)
        atomic_store(&far_objects[i].alive, 0);
    object_store_thread_end();
    object_store_gc_done();
    CHECK(object_store_sweep(&far_ops, NULL) == FAR / 2);
    census c = { 0, 0, 0 };
    object_store_each(&far_ops, NULL, far_visit, &c);
    CHECK(c.visited == FAR / 2 && c.dead_visited == 0 && c.wrong_subsite == 0);
    object_store_free(&far_ops, NULL);
    size_t bad = 0;
    for (size_t i = 0; i < FAR; i++)
        bad += atomic_load(&far_objects[i].released) != 1;
    CHECK(bad == 0);
    CHECK(object_store_stats_now().chunks == 0);
}
