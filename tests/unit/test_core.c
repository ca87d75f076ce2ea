/* Unit tests: keytab and the shared tables. */
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/hidden_names.h"
#include "core/idmap.h"
#include "core/keytab.h"
#include "core/tables.h"
#include "core/trace_cache.h"
#include "heap/heap_tags.h"
#include "profile/profile.h"

TEST(keytab_interns_and_finds)
{
    keytab t;
    keytab_init(&t, 1000000);
    int created = 0;
    CHECK(keytab_intern(&t, "abc", 3, &created) == 0 && created);
    CHECK(keytab_intern(&t, "abd", 3, &created) == 1 && created);
    CHECK(keytab_intern(&t, "abc", 3, &created) == 0 && !created);
    CHECK(keytab_find(&t, "abd", 3) == 1);
    CHECK(keytab_find(&t, "ab", 2) == KEYTAB_FULL);
    CHECK(keytab_intern(&t, "", 0, &created) == 2 && created);   /* empty key is a key */
    CHECK(keytab_find(&t, "", 0) == 2);
    keytab_free(&t);
}

TEST(keytab_grows_and_keeps_keys_in_place)
{
    keytab t;
    keytab_init(&t, 1000000);
    const void *first = NULL;
    for (uint32_t i = 0; i < 200000; i++) {
        uint64_t k = (uint64_t)i * 0x9e3779b97f4a7c15ull;
        CHECK(keytab_intern(&t, &k, sizeof k, NULL) == i);
        if (i == 0)
            first = keytab_key(&t, 0, NULL);
    }
    CHECK(keytab_key(&t, 0, NULL) == first);      /* never moved through many growths */
    for (uint32_t i = 0; i < 200000; i += 997) {
        uint64_t k = (uint64_t)i * 0x9e3779b97f4a7c15ull;
        uint32_t len = 0;
        CHECK(keytab_find(&t, &k, sizeof k) == i);
        const uint64_t *stored = keytab_key(&t, i, &len);
        CHECK(len == sizeof k && *stored == k);
        CHECK(((uintptr_t)stored & 7) == 0);       /* aligned for u32/u64 readers */
    }
    keytab_free(&t);
}

/* What `status` reports as the interning tables' memory: every byte
 * malloc'ed, counted as it is allocated, and given back by keytab_free. */
TEST(keytab_counts_the_bytes_it_holds)
{
    size_t before = keytab_bytes_held();
    keytab t;
    keytab_init(&t, 1000000);
    for (uint64_t k = 0; k < 1000; k++)
        CHECK(keytab_intern(&t, &k, sizeof k, NULL) == k);
    /* 1024 entries x (hash 4 + key pointer 8 + length 4), 2048 buckets x 4
     * (load <= 1/2), one 64 KiB arena chunk and its 16-byte header. */
    CHECK(keytab_bytes_held() - before == 1024 * 16 + 2048 * 4 + 65536 + 16);
    static char big[100000];
    CHECK(keytab_intern(&t, big, sizeof big, NULL) == 1000);   /* a chunk of its own */
    CHECK(keytab_bytes_held() - before == 1024 * 16 + 2048 * 4 + 65536 + 16 + sizeof big + 16);
    keytab_free(&t);
    CHECK(keytab_bytes_held() == before);
}

TEST(keytab_is_bounded)
{
    keytab t;
    keytab_init(&t, 3);
    CHECK(keytab_intern(&t, "a", 1, NULL) == 0);
    CHECK(keytab_intern(&t, "b", 1, NULL) == 1);
    CHECK(keytab_intern(&t, "c", 1, NULL) == 2);
    CHECK(keytab_intern(&t, "d", 1, NULL) == KEYTAB_FULL);
    CHECK(keytab_intern(&t, "a", 1, NULL) == 0);     /* existing keys still found */
    CHECK(t.count == 3);
    keytab_free(&t);
}

TEST(signature_names)
{
    char buf[64];
    CHECK(signature_to_java_name("Ljava/lang/String;", buf, sizeof buf) == 0);
    CHECK_STR(buf, "java.lang.String");
    CHECK(signature_to_java_name("[B", buf, sizeof buf) == 0);
    CHECK_STR(buf, "byte[]");
    CHECK(signature_to_java_name("[[Ljava/util/Map$Entry;", buf, sizeof buf) == 0);
    CHECK_STR(buf, "java.util.Map$Entry[][]");
    CHECK(signature_to_java_name("I", buf, sizeof buf) == 0);
    CHECK_STR(buf, "int");
    CHECK(signature_to_java_name("Lfoo", buf, sizeof buf) == -1);   /* no ';' */
    CHECK(signature_to_java_name("X", buf, sizeof buf) == -1);
    CHECK(signature_to_java_name("II", buf, sizeof buf) == -1);
    CHECK(signature_to_java_name("Ljava/lang/String;", buf, 5) == -1);  /* does not fit */
    CHECK(strlen(buf) == 4);
}

TEST(tables_serials_follow_hprof)
{
    profile_tables *tables = profile_tables_new(NULL);
    serial_t c = class_intern(tables, "Ljava/lang/Object;");
    CHECK(c == CLASS_SERIAL_BASE);
    CHECK(class_intern(tables, "[I") == CLASS_SERIAL_BASE + 1);
    CHECK(class_intern(tables, "Ljava/lang/Object;") == c);
    CHECK_STR(class_java_name(tables, c), "java.lang.Object");
    CHECK_STR(class_signature(tables, c + 1), "[I");

    line_entry lines[] = { { 10, 21 }, { 0, 20 }, { 25, 22 } };   /* unsorted on purpose */
    method_desc d = { .class_serial = c, .name = "hashCode", .signature = "()I",
                      .source_file = "Object.java", .lines = lines, .line_count = 3 };
    serial_t m = method_add(tables, 0x7f0011, &d);
    CHECK(m == METHOD_SERIAL_BASE);
    CHECK(method_add(tables, 0x7f0011, &d) == m);
    CHECK(method_find(tables, 0x7f0011) == m);
    CHECK(method_find(tables, 0x7f0012) == 0);
    CHECK(method_line_of(tables, m, 0) == 20);
    CHECK(method_line_of(tables, m, 9) == 20);
    CHECK(method_line_of(tables, m, 10) == 21);
    CHECK(method_line_of(tables, m, 24) == 21);
    CHECK(method_line_of(tables, m, 1000) == 22);
    CHECK(method_line_of(tables, m, -1) == LINE_UNKNOWN);

    method_desc nd = { .class_serial = c, .name = "wait0", .is_native = 1 };
    serial_t native = method_add(tables, 0x7f0099, &nd);
    CHECK(method_line_of(tables, native, 5) == LINE_NATIVE);
    method_info mi;
    CHECK(method_get(tables, native, &mi) == 0);
    CHECK_STR(mi.class_name, "java.lang.Object");
    CHECK_STR(mi.name, "wait0");
    CHECK(mi.source_file == NULL);

    serial_t f1 = frame_intern(tables, m, 20), f2 = frame_intern(tables, m, 21);
    CHECK(f1 == FRAME_SERIAL_BASE && f2 == FRAME_SERIAL_BASE + 1);
    CHECK(frame_intern(tables, m, 20) == f1);
    serial_t fm; int32_t fl;
    CHECK(frame_get(tables, f2, &fm, &fl) == 0 && fm == m && fl == 21);

    serial_t fr[] = { f2, f1 };
    serial_t t1 = trace_intern(tables, 0, fr, 2);
    CHECK(t1 == TRACE_SERIAL_BASE);
    CHECK(trace_intern(tables, 0, fr, 2) == t1);
    CHECK(trace_intern(tables, THREAD_SERIAL_BASE, fr, 2) == t1 + 1);   /* thread=y: distinct */
    CHECK(trace_intern(tables, 0, fr, 1) == t1 + 2);
    CHECK(trace_intern(tables, 0, NULL, 0) == EMPTY_TRACE_SERIAL);
    serial_t th; const serial_t *frames; uint32_t n;
    CHECK(trace_get(tables, t1 + 1, &th, &frames, &n) == 0 && th == THREAD_SERIAL_BASE && n == 2);
    CHECK(frames[0] == f2 && frames[1] == f1);
    CHECK(trace_get(tables, EMPTY_TRACE_SERIAL, &th, &frames, &n) == 0 && n == 0);
    CHECK(trace_get(tables, t1 + 99, &th, &frames, &n) == -1);

    serial_t t = thread_add(tables, "main", "main", 1);
    CHECK(t == THREAD_SERIAL_BASE);
    CHECK(thread_add(tables, "worker", "main", 2) == THREAD_SERIAL_BASE + 1);
    thread_mark_ended(tables, t);
    thread_info ti;
    CHECK(thread_get(tables, t, &ti) == 0 && ti.ended && strcmp(ti.name, "main") == 0);
    CHECK(thread_get(tables, t + 1, &ti) == 0 && !ti.ended);
    CHECK(thread_get(tables, t + 2, &ti) == -1);
    serial_t derived = thread_add(tables, "pool-1", "main", 0);      /* 0: id derived from the serial */
    CHECK(thread_get(tables, derived, &ti) == 0 && ti.object_id == THREAD_DERIVED_ID(derived));
    /* Never an object's id in a heap dump: above every user-space address
     * (HotSpot's dumper: object addresses, which a heap under 4 GB puts
     * near 0x50000000 + serial, the old derived id), and neither a dump
     * tag of the agent's walk nor a class serial. */
    CHECK(ti.object_id >= (UINT64_C(1) << 56) && ti.object_id != 0x50000000ull + derived);
    CHECK(!heap_tag_is_dump((int64_t)ti.object_id) && !heap_tag_is_class((int64_t)ti.object_id));
    CHECK(thread_add(tables, "pool-2", "main", 0) != derived);
    CHECK(thread_get(tables, derived + 1, &ti) == 0 && ti.object_id == THREAD_DERIVED_ID(derived + 1));
    profile_tables_free(tables);
}

/* thread=n: ended threads beyond the bound are forgotten, oldest end first;
 * their slots and names are reused, serials never are, and a writer's
 * watermark skips ends it can no longer name. */
TEST(ended_threads_beyond_the_bound_are_forgotten)
{
    profile_tables *tables = profile_tables_new(NULL);
    thread_keep_ended(tables, 3);
    serial_t t[8];
    char name[32];
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "worker-%d", i);
        t[i] = thread_add(tables, name, "main", 0);
        CHECK(t[i] == THREAD_SERIAL_BASE + (serial_t)i);
    }
    uint32_t n = 0;
    uint64_t seen = 0;
    serial_t *ended = thread_ended_since(tables, 0, &n, &seen);
    CHECK(ended != NULL && n == 0 && seen == 0);
    free(ended);
    /* End 5, 1, 6, 2, 7 in that order: 5 and 1 are forgotten. */
    const int order[5] = {5, 1, 6, 2, 7};
    for (int i = 0; i < 5; i++)
        thread_mark_ended(tables, t[order[i]]);
    thread_info ti;
    CHECK(thread_get(tables, t[5], &ti) == -1 && thread_get(tables, t[1], &ti) == -1);
    CHECK(thread_get(tables, t[6], &ti) == 0 && ti.ended && strcmp(ti.name, "worker-6") == 0 && ti.end_seq == 3);
    CHECK(thread_get(tables, t[0], &ti) == 0 && !ti.ended);
    CHECK(thread_forgotten_count(tables) == 2);
    ended = thread_ended_since(tables, 0, &n, &seen);
    CHECK(ended != NULL && n == 3 && ended[0] == t[6] && ended[1] == t[2] && ended[2] == t[7] && seen == 5);
    free(ended);
    ended = thread_ended_since(tables, 4, &n, &seen);            /* a writer that wrote ends 1..4 */
    CHECK(ended != NULL && n == 1 && ended[0] == t[7] && seen == 5);
    free(ended);
    /* Slots are reused, serials are new, names are the new thread's. */
    serial_t fresh = thread_add(tables, "fresh", "main", 0);
    CHECK(fresh == THREAD_SERIAL_BASE + 8);
    CHECK(thread_get(tables, fresh, &ti) == 0 && strcmp(ti.name, "fresh") == 0 && !ti.ended);
    for (int round = 0; round < 1000; round++) {          /* many come and go: memory stays put */
        snprintf(name, sizeof name, "short-%d", round);
        thread_mark_ended(tables, thread_add(tables, name, "main", 0));
    }
    size_t held = tables_payload_bytes(tables);
    for (int round = 0; round < 10000; round++) {
        snprintf(name, sizeof name, "short-%d", round);
        thread_mark_ended(tables, thread_add(tables, name, "main", 0));
    }
    CHECK(tables_payload_bytes(tables) <= held + 64);
    CHECK(thread_get(tables, t[0], &ti) == 0 && strcmp(ti.name, "worker-0") == 0);   /* running: held */
    CHECK(thread_forgotten_count(tables) == 5 + 11000 - 3);   /* every end but the last 3 */
    /* A long name is cut, and says so. */
    char long_name[THREAD_NAME_MAX + 40];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    serial_t l = thread_add(tables, long_name, "main", 0);
    CHECK(thread_get(tables, l, &ti) == 0 && ti.name_truncated && strlen(ti.name) == THREAD_NAME_MAX - 1);
    profile_tables_free(tables);
}

/* Removal keeps every other key findable (probe runs are closed up), and a
 * map whose entries come and go stays small. */
TEST(idmap_remove_keeps_the_rest)
{
    idmap m = {0};
    for (uint64_t k = 1; k <= 5000; k++)
        CHECK(idmap_put(&m, k * 7919, (uint32_t)k) == 0);
    for (uint64_t k = 1; k <= 5000; k += 2)
        idmap_remove(&m, k * 7919);
    idmap_remove(&m, 123456789);                          /* absent: nothing */
    int right = 0;
    for (uint64_t k = 1; k <= 5000; k++)
        right += idmap_get(&m, k * 7919) == (k % 2 ? 0u : (uint32_t)k);
    CHECK(right == 5000 && m.count == 2500);
    uint32_t cap = m.capacity;
    for (uint64_t round = 0; round < 200000; round++) {   /* 10 at a time come and go */
        CHECK(idmap_put(&m, (1ull << 40) + round, 1) == 0);
        if (round >= 10)
            idmap_remove(&m, (1ull << 40) + round - 10);
    }
    CHECK(m.capacity == cap && m.count == 2510);
    idmap_free(&m);
}

/* A writer's START/END records: an END only after its START (the soak once
 * got ENDs of threads that started after the writer counted them), none for
 * a thread forgotten before its START was written. */
typedef struct thread_records_seen {
    char text[256];
} thread_records_seen;

static void seen_start(void *ctx, serial_t serial, const thread_info *ti)
{
    thread_records_seen *seen = ctx;
    size_t n = strlen(seen->text);
    snprintf(seen->text + n, sizeof seen->text - n, "S%u:%s ", serial - THREAD_SERIAL_BASE, ti->name);
}

static void seen_end(void *ctx, serial_t serial)
{
    thread_records_seen *seen = ctx;
    size_t n = strlen(seen->text);
    snprintf(seen->text + n, sizeof seen->text - n, "E%u ", serial - THREAD_SERIAL_BASE);
}

TEST(thread_records_end_only_after_start)
{
    profile_tables *tables = profile_tables_new(NULL);
    thread_keep_ended(tables, 1);
    thread_records_written written = {0, 0};
    thread_records_seen seen = {""};
    serial_t a = thread_add(tables, "a", "g", 0);
    CHECK(thread_records_write(tables, &written, seen_start, seen_end, &seen) == 0);
    CHECK(strcmp(seen.text, "S0:a ") == 0 && written.started == 1);
    serial_t b = thread_add(tables, "b", "g", 0), c = thread_add(tables, "c", "g", 0), d = thread_add(tables, "d", "g", 0);
    thread_mark_ended(tables, a);
    thread_mark_ended(tables, b);                       /* a is forgotten (bound 1) */
    thread_mark_ended(tables, c);                       /* b is forgotten before its START was written */
    seen.text[0] = '\0';
    CHECK(thread_records_write(tables, &written, seen_start, seen_end, &seen) == 0);
    CHECK(strcmp(seen.text, "S2:c S3:d E2 ") == 0 && written.started == 4);
    thread_mark_ended(tables, d);                       /* c forgotten; d's START went out before */
    seen.text[0] = '\0';
    CHECK(thread_records_write(tables, &written, seen_start, seen_end, &seen) == 0);
    CHECK(strcmp(seen.text, "E3 ") == 0);
    seen.text[0] = '\0';
    CHECK(thread_records_write(tables, &written, seen_start, seen_end, &seen) == 0 && seen.text[0] == '\0');
    profile_tables_free(tables);
}

/* The serial -> slot index keeps finding every thread while others leave. */
TEST(thread_index_survives_removals)
{
    profile_tables *tables = profile_tables_new(NULL);
    thread_keep_ended(tables, 0);
    serial_t s[3000];
    for (int i = 0; i < 3000; i++)
        s[i] = thread_add(tables, "t", "g", 0);
    for (int i = 0; i < 3000; i += 3)
        thread_mark_ended(tables, s[i]);                        /* bound 0: forgotten at once */
    thread_info ti;
    int found = 0, gone = 0;
    for (int i = 0; i < 3000; i++) {
        int got = thread_get(tables, s[i], &ti) == 0;
        found += got && i % 3 != 0;
        gone += !got && i % 3 == 0;
    }
    CHECK(found == 2000 && gone == 1000);
    profile_tables_free(tables);
}

/* Two instances share nothing: each numbers from its own bases, finds only
 * its own entries, and one freed and made again (the reset of a test)
 * leaves the other as it was. */
TEST(tables_two_instances_are_independent)
{
    profile_tables *a = profile_tables_new(NULL), *b = profile_tables_new(NULL);
    CHECK(a != NULL && b != NULL);
    serial_t ca = class_intern(a, "Lpkg/A;");
    CHECK(class_intern(b, "Lpkg/B;") == CLASS_SERIAL_BASE && ca == CLASS_SERIAL_BASE);
    CHECK(class_intern(b, "Lpkg/A;") == CLASS_SERIAL_BASE + 1);   /* b's own numbering */
    CHECK(strcmp(class_java_name(a, ca), "pkg.A") == 0 && strcmp(class_java_name(b, ca), "pkg.B") == 0);
    method_desc d = { .class_serial = ca, .name = "run", .signature = "()V" };
    serial_t ma = method_add(a, 42, &d);
    CHECK(ma == METHOD_SERIAL_BASE && method_find(a, 42) == ma && method_find(b, 42) == 0);
    method_info mi;
    CHECK(method_get(b, ma, &mi) != 0 && method_count(b) == 0 && method_count(a) == 1);
    serial_t fa = frame_intern(a, ma, 7);
    serial_t ta = trace_intern(a, 0, &fa, 1);
    CHECK(ta == TRACE_SERIAL_BASE && trace_count(a) == 1 && trace_count(b) == 0);
    serial_t thread_of_a = thread_add(a, "worker", "main", 0);
    CHECK(thread_of_a == THREAD_SERIAL_BASE && thread_add(b, "other", "main", 0) == THREAD_SERIAL_BASE);
    thread_info ti;
    CHECK(thread_get(a, thread_of_a, &ti) == 0 && strcmp(ti.name, "worker") == 0);
    CHECK(thread_get(b, thread_of_a, &ti) == 0 && strcmp(ti.name, "other") == 0);
    thread_keep_ended(b, 0);                                 /* b forgets ended threads; a keeps them */
    thread_mark_ended(b, THREAD_SERIAL_BASE);
    thread_mark_ended(a, thread_of_a);
    CHECK(thread_forgotten_count(b) == 1 && thread_forgotten_count(a) == 0 && thread_get(a, thread_of_a, &ti) == 0);
    /* b made again: numbered from the start; a's serials and names unchanged. */
    profile_tables_free(b);
    b = profile_tables_new(NULL);
    CHECK(b != NULL && class_count(b) == 0 && thread_count(b) == 0 && string_count(b) == 0);
    CHECK(class_intern(b, "Lpkg/C;") == CLASS_SERIAL_BASE);
    CHECK(class_intern(a, "Lpkg/A;") == ca && strcmp(class_java_name(a, ca), "pkg.A") == 0);
    CHECK(method_find(a, 42) == ma && trace_intern(a, 0, &fa, 1) == ta);
    serial_t thread = 0;
    const serial_t *frames = NULL;
    uint32_t n = 0;
    int32_t line = 0;
    CHECK(trace_get(a, ta, &thread, &frames, &n) == 0 && n == 1 && frames[0] == fa);
    CHECK(frame_get(a, fa, &ma, &line) == 0 && line == 7 && frame_get(b, fa, &ma, &line) != 0);
    profile_tables_free(a);
    profile_tables_free(b);
}

TEST(tables_limits_are_enforced)
{
    tables_limits l = tables_default_limits();
    l.max_traces = 2;
    l.max_threads = 1;
    profile_tables *tables = profile_tables_new(&l);
    serial_t f = 1;
    CHECK(trace_intern(tables, 0, &f, 1) != 0);
    CHECK(trace_intern(tables, 1, &f, 1) != 0);
    CHECK(trace_intern(tables, 2, &f, 1) == 0);              /* full: 0, never a wrong serial */
    CHECK(thread_add(tables, "a", "g", 1) != 0);
    CHECK(thread_add(tables, "b", "g", 2) == 0);
    profile_tables_free(tables);
}

TEST(trace_cache_answers_only_exact_frames)
{
    CHECK(trace_cache_new(21, 4) == NULL);                  /* too many slots */
    CHECK(trace_cache_new(4, 0) == NULL);
    trace_cache *c = trace_cache_new(4, 4);
    CHECK(c != NULL);
    int m1, m2, m3;                                          /* stand-ins for method ids */
    frame_ref a[3] = { { 10, &m1 }, { 20, &m2 }, { BCI_NATIVE, &m3 } };
    CHECK(trace_cache_get(c, 0, a, 3, NULL) == 0);
    trace_cache_put(c, 0, a, 3, 300005, 7);
    stack_id stack = 0;
    CHECK(trace_cache_get(c, 0, a, 3, &stack) == 300005 && stack == 7);   /* the whole stack with it */
    CHECK(trace_cache_get(c, 200001, a, 3, NULL) == 0);            /* other thread serial */
    CHECK(trace_cache_get(c, 0, a, 2, NULL) == 0);                 /* a prefix is another trace */
    frame_ref b[3] = { { 11, &m1 }, { 20, &m2 }, { BCI_NATIVE, &m3 } };
    CHECK(trace_cache_get(c, 0, b, 3, NULL) == 0);                 /* other bci */
    frame_ref d[3] = { { 10, &m1 }, { 20, &m3 }, { BCI_NATIVE, &m3 } };
    CHECK(trace_cache_get(c, 0, d, 3, NULL) == 0);                 /* other method */
    trace_cache_put(c, 0, a, 0, 300000, 0);                     /* the empty stack is cacheable */
    CHECK(trace_cache_get(c, 0, a, 0, NULL) == 300000);
    frame_ref e[5] = { { 1, &m1 }, { 2, &m1 }, { 3, &m1 }, { 4, &m1 }, { 5, &m1 } };
    trace_cache_put(c, 0, e, 5, 300009, 0);                     /* longer than max_frames: not kept */
    CHECK(trace_cache_get(c, 0, e, 5, NULL) == 0);
    trace_cache_put(c, 0, b, 3, 0, 0);                          /* 0 is "none": not kept */
    CHECK(trace_cache_get(c, 0, b, 3, NULL) == 0);
    /* Direct-mapped: many traces in 16 slots evict each other, and every
     * answer given is still the one stored for exactly those frames. */
    int wrong = 0, hits = 0;
    for (int i = 0; i < 1000; i++) {
        frame_ref f[1] = { { i, &m1 } };
        trace_cache_put(c, 0, f, 1, (serial_t)(400000 + i), 0);
    }
    for (int i = 0; i < 1000; i++) {
        frame_ref f[1] = { { i, &m1 } };
        serial_t t = trace_cache_get(c, 0, f, 1, NULL);
        hits += t != 0;
        wrong += t != 0 && t != (serial_t)(400000 + i);
    }
    CHECK(wrong == 0);
    CHECK(hits > 0 && hits <= 16);
    trace_cache_free(c);
    trace_cache_free(NULL);
}

/* Class names may be up to 64 KiB (a CONSTANT_Utf8); generated classes get
 * long ones. Both the name and a second class of that name must survive. */
TEST(tables_class_with_a_long_name)
{
    profile_tables *tables = profile_tables_new(NULL);
    enum { N = 5000 };
    static char sig[N + 8], want[N + 8];
    sig[0] = '[';
    sig[1] = 'L';
    for (int i = 0; i < N; i++) {
        sig[2 + i] = i % 10 == 9 ? '/' : (char)('a' + i % 26);
        want[i] = i % 10 == 9 ? '.' : (char)('a' + i % 26);
    }
    sig[N + 2] = ';';
    sig[N + 3] = '\0';
    memcpy(want + N, "[]", 3);
    serial_t a = class_intern(tables, sig);
    CHECK(a != 0);
    CHECK_STR(class_java_name(tables, a), want);
    CHECK_STR(class_signature(tables, a), sig);
    CHECK(class_claim(tables, a) == 1);
    serial_t b = class_intern_another(tables, sig);
    CHECK(b != 0 && b != a);
    CHECK_STR(class_java_name(tables, b), want);
    CHECK(class_intern_another(tables, sig) == b);
    profile_tables_free(tables);
}

TEST(tables_hidden_classes_frames_named_without_address)
{
    /* Two lambda classes of JDK 17 (counter and address) and one of JDK 21+
     * (address only): distinct classes with their full names, whose methods'
     * frames show one name that does not change from run to run. */
    profile_tables *tables = profile_tables_new(NULL);
    serial_t a = class_intern(tables, "LWordFreq$$Lambda$4.0x00007f89e0003a30;");
    serial_t b = class_intern(tables, "LWordFreq$$Lambda$15.0x00007f89e0004000;");
    serial_t c = class_intern(tables, "Ljava/lang/invoke/LambdaForm$MH.0x00007f00c0001000;");
    serial_t d = class_intern(tables, "Lp/Q$$Lambda$3;");           /* not hidden: kept */
    CHECK(a != 0 && b != 0 && a != b && c != 0 && d != 0);
    CHECK_STR(class_java_name(tables, a), "WordFreq$$Lambda$4.0x00007f89e0003a30");
    CHECK_STR(class_frame_name(tables, a), "WordFreq$$Lambda");
    CHECK_STR(class_frame_name(tables, b), "WordFreq$$Lambda");
    CHECK_STR(class_frame_name(tables, c), "java.lang.invoke.LambdaForm$MH");
    CHECK_STR(class_frame_name(tables, d), "p.Q$$Lambda$3");
    method_desc md = { .class_serial = b, .name = "apply", .signature = "(Ljava/lang/Object;)Ljava/lang/Object;" };
    serial_t m = method_add(tables, 0x7f0011, &md);
    method_info mi;
    CHECK(m != 0 && method_get(tables, m, &mi) == 0);
    CHECK_STR(mi.class_name, "WordFreq$$Lambda");
    CHECK(mi.class_serial == b);
    char name[] = "A$$Lambda$12.0x1f.run;B$$Lambda$.0x2.x;C$$Lambda$7";
    CHECK(hidden_name_drop_addresses(name, strlen(name)) == strlen("A$$Lambda.run;B$$Lambda$.x;C$$Lambda$7"));
    CHECK_STR(name, "A$$Lambda.run;B$$Lambda$.x;C$$Lambda$7");
    profile_tables_free(tables);
}

TEST(tables_classes_of_one_name_from_two_loaders)
{
    profile_tables *tables = profile_tables_new(NULL);
    serial_t a = class_intern(tables, "Lp/Twin;");
    CHECK(class_claim(tables, a) == 1);                              /* the first class object */
    CHECK(class_claim(tables, a) == 0);                              /* already its */
    serial_t b = class_intern_another(tables, "Lp/Twin;");           /* a second class object */
    CHECK(b != 0 && b != a);
    CHECK(class_intern_another(tables, "Lp/Twin;") == b);            /* unclaimed yet: the same again */
    CHECK(class_claim(tables, b) == 1);
    serial_t c = class_intern_another(tables, "Lp/Twin;");           /* a third */
    CHECK(c != 0 && c != a && c != b);
    CHECK_STR(class_signature(tables, b), "Lp/Twin;");
    CHECK_STR(class_java_name(tables, c), "p.Twin");
    CHECK(class_intern(tables, "Lp/Twin;") == a);                    /* the name still means the first */
    CHECK(class_count(tables) == 3);
    CHECK(class_claim(tables, 99) == 0);                             /* no such serial */
    profile_tables_free(tables);
}

TEST(tables_class_load_traces)
{
    profile_tables *tables = profile_tables_new(NULL);
    serial_t a = class_intern(tables, "Lp/A;"), b = class_intern(tables, "Lp/B;");
    serial_t m = method_add(tables, 1, &(method_desc){ .class_serial = a, .name = "first", .signature = "()V" });
    serial_t f = frame_intern(tables, m, 12);
    serial_t t = trace_intern(tables, 0, &f, 1);
    CHECK(class_load_trace(tables, a) == 0);                         /* none recorded yet */
    CHECK(class_set_load_trace(tables, a, t) == 1);
    CHECK(class_load_trace(tables, a) == t);
    CHECK(class_set_load_trace(tables, a, t + 1) == 0);              /* a later ClassLoad of it: the first stays */
    CHECK(class_load_trace(tables, a) == t);
    CHECK(class_load_trace(tables, b) == 0);                         /* its own, still none */
    CHECK(class_set_load_trace(tables, b, EMPTY_TRACE_SERIAL) == 1); /* loaded before the agent started */
    CHECK(class_set_load_trace(tables, b, t) == 0);
    CHECK(class_load_trace(tables, b) == EMPTY_TRACE_SERIAL);
    CHECK(class_set_load_trace(tables, 99, t) == 0);                 /* no such class: nothing happens */
    CHECK(class_load_trace(tables, 99) == 0);
    profile_tables_free(tables);
}
