/* Unit tests: allocation sites (site_table) and the tag encoding. */
#include "unit.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "heap/heap_tags.h"
#include "heap/site_table.h"

TEST(sites_intern_one_subsite_per_trace_class_size)
{
    CHECK(site_table_init(100) == 0);
    subsite_t a = site_intern(300001, 0, 100001, 16);
    CHECK(a == 1);
    CHECK(site_intern(300001, 0, 100001, 16) == a);
    subsite_t b = site_intern(300001, 0, 100001, 24);      /* same site, other array length */
    subsite_t c = site_intern(300002, 0, 100001, 16);
    CHECK(b != a && c != a && c != b);
    serial_t t, k;
    uint64_t size;
    CHECK(site_get(b, &t, &k, &size) == 0 && t == 300001 && k == 100001 && size == 24);
    CHECK(site_get(0, &t, &k, &size) != 0);
    CHECK(site_get(99, &t, &k, &size) != 0);
    site_table_free();
}

TEST(sites_rows_merge_subsites_and_order_by_live_bytes)
{
    CHECK(site_table_init(100) == 0);
    subsite_t a16 = site_intern(300001, 0, 100001, 16), a24 = site_intern(300001, 0, 100001, 24);
    subsite_t b = site_intern(300002, 0, 100002, 1000);
    for (int i = 0; i < 10; i++) site_count_alloc(a16);
    for (int i = 0; i < 5; i++) site_count_alloc(a24);
    for (int i = 0; i < 3; i++) site_count_alloc(b);
    for (int i = 0; i < 4; i++) site_count_free(a16);
    for (int i = 0; i < 3; i++) site_count_free(b);            /* all of b died */
    site_row *rows = NULL, tot;
    uint32_t n = 0;
    CHECK(site_rows(0, &rows, &n, &tot) == 0);
    CHECK(n == 2);
    /* a: live 6*16 + 5*24 = 216 bytes, 11 objs; alloc 160 + 120 = 280, 15 objs */
    CHECK(rows[0].trace == 300001 && rows[0].live_bytes == 216 && rows[0].live_objs == 11);
    CHECK(rows[0].alloc_bytes == 280 && rows[0].alloc_objs == 15);
    CHECK(rows[1].trace == 300002 && rows[1].live_bytes == 0 && rows[1].alloc_bytes == 3000);
    CHECK(tot.live_bytes == 216 && tot.alloc_objs == 18 && tot.alloc_bytes == 3280);
    free(rows);
    site_table_free();
}

TEST(sites_full_table_returns_zero)
{
    CHECK(site_table_init(3) == 0);
    CHECK(site_intern(1, 0, 1, 1) && site_intern(2, 0, 1, 1) && site_intern(3, 0, 1, 1));
    CHECK(site_intern(4, 0, 1, 1) == 0);
    CHECK(site_intern(2, 0, 1, 1) == 2);                    /* known ones still found */
    site_count_alloc(0);                                  /* ignored, no crash */
    site_table_free();
}

TEST(sites_grow_past_many_subsites)
{
    CHECK(site_table_init(20000) == 0);
    for (uint32_t i = 0; i < 20000; i++)
        CHECK(site_intern(300001 + i % 97, 0, 100001 + i / 97, 16) == i + 1);
    for (uint32_t i = 0; i < 20000; i += 777)
        CHECK(site_intern(300001 + i % 97, 0, 100001 + i / 97, 16) == i + 1);
    CHECK(site_subsite_count() == 20000);
    site_table_free();
}

static void *count_many(void *arg)
{
    subsite_t s = *(subsite_t *)arg;
    for (int i = 0; i < 100000; i++) { site_count_alloc(s); if (i % 2) site_count_free(s); }
    return NULL;
}

TEST(sites_counts_are_atomic)
{
    CHECK(site_table_init(10) == 0);
    subsite_t s = site_intern(300001, 0, 100001, 32);
    pthread_t th[4];
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, count_many, &s);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    site_row *rows = NULL, tot;
    uint32_t n = 0;
    CHECK(site_rows(0, &rows, &n, &tot) == 0 && n == 1);
    CHECK(rows[0].alloc_objs == 400000 && rows[0].live_objs == 200000 && rows[0].live_bytes == 6400000);
    free(rows);
    site_table_free();
}

TEST(sites_sampled_weights_are_unbiased)
{
    /* A 512 KiB interval: a 16-byte object is sampled with p ~ 16/524288,
     * so one sample stands for ~32768 objects; a 10 MiB array is always sampled. */
    CHECK(fabs(site_sample_weight(16, 524288) - 32768.5) < 1.0);
    CHECK(fabs(site_sample_weight(10u << 20, 524288) - 1.0) < 1e-6);
    CHECK(site_sample_weight(16, 0) == 1.0);
    CHECK(site_table_init(10) == 0);
    subsite_t s = site_intern(300001, 0, 100001, 16);
    site_count_alloc(s);
    site_count_alloc(s);
    site_row *rows = NULL, tot;
    uint32_t n = 0;
    CHECK(site_rows(524288, &rows, &n, &tot) == 0 && n == 1);
    CHECK(rows[0].alloc_objs == 65537 && rows[0].alloc_bytes == 65537 * 16);
    free(rows);
    site_table_free();
}

TEST(heap_tags_kinds_do_not_overlap)
{
    CHECK(heap_tag_is_class(100001));
    CHECK(!heap_tag_is_class(heap_tag_alloc(5)));
    CHECK(!heap_tag_is_class(heap_tag_dump(5, 7)));
    CHECK(!heap_tag_is_class(0));
    CHECK(heap_tag_alloc(5) < 0);
    CHECK(heap_tag_subsite(heap_tag_alloc(5)) == 5);
    CHECK(heap_tag_subsite(heap_tag_alloc(SUBSITE_MAX)) == SUBSITE_MAX);
    CHECK(heap_tag_is_dump(heap_tag_dump(SUBSITE_MAX, 0xFFFFFFFFu)));
    CHECK(heap_tag_subsite(heap_tag_dump(SUBSITE_MAX, 0xFFFFFFFFu)) == SUBSITE_MAX);
    CHECK(heap_tag_subsite(heap_tag_dump(0, 12)) == 0);
    CHECK(!heap_tag_is_dump(heap_tag_alloc(3)));
    CHECK(heap_tag_subsite(100001) == 0);
    CHECK(heap_tag_dump(1, 2) != heap_tag_dump(1, 3) && heap_tag_dump(1, 2) != heap_tag_dump(2, 2));
}

TEST(sites_census_replaces_allocs_minus_frees)
{
    CHECK(site_table_init(10) == 0);
    subsite_t s = site_intern(300001, 0, 100001, 16);
    for (int i = 0; i < 10; i++) site_count_alloc(s);
    site_count_free(s);                               /* 9 live by events; a late event is missing */
    site_census_begin();
    for (int i = 0; i < 4; i++) site_census_add(s);   /* the heap holds 4 */
    site_census_add(0);                               /* untracked: ignored */
    site_row *rows = NULL, tot;
    uint32_t n = 0;
    CHECK(site_rows(0, &rows, &n, &tot) == 0 && n == 1);
    CHECK(rows[0].live_objs == 4 && rows[0].live_bytes == 64 && rows[0].alloc_objs == 10);
    free(rows);
    site_table_free();
}

/* After a reset, a site counts only what was allocated since: objects from
 * before keep their subsite (tags name it) but are out of the rows. */
TEST(sites_reset_counts_only_allocations_since)
{
    CHECK(site_table_init(100) == 0);
    subsite_t old = site_intern(300001, 0, 100001, 16);
    for (int i = 0; i < 10; i++) site_count_alloc(old);
    site_table_reset();
    subsite_t fresh = site_intern(300001, 0, 100001, 16);
    CHECK(fresh != 0 && fresh != old);
    CHECK(site_intern(300001, 0, 100001, 16) == fresh);
    for (int i = 0; i < 3; i++) site_count_alloc(fresh);
    site_count_free(old);                               /* an old object dies: no effect */
    serial_t t;
    CHECK(site_get(old, &t, NULL, NULL) == 0 && t == 300001);
    site_row *rows = NULL, tot;
    uint32_t n = 0;
    CHECK(site_rows(0, &rows, &n, &tot) == 0);
    CHECK(n == 1 && rows[0].alloc_objs == 3 && rows[0].live_objs == 3 && tot.alloc_bytes == 48);
    free(rows);
    site_census_begin();                                /* the census finds old and new */
    site_census_add(old);
    site_census_add(fresh);
    CHECK(site_rows(0, &rows, &n, &tot) == 0);
    CHECK(n == 1 && rows[0].live_objs == 1 && rows[0].alloc_objs == 3);
    free(rows);
    site_table_free();
}

/* loop= resets every period: the same sites must not make the table grow
 * (each reset once made every site's subsites anew), and a handle from
 * before a reset still names its site but no longer counts in the census. */
TEST(sites_reset_keeps_the_table_bounded)
{
    CHECK(site_table_init(100) == 0);
    subsite_t first = site_intern(300001, 0, 100001, 16);
    site_intern(300002, 0, 100001, 32);
    size_t bytes = site_table_bytes();
    uint32_t count = site_subsite_count();
    subsite_t last = first;
    for (int period = 0; period < 1001; period++) {
        site_table_reset();
        last = site_intern(300001, 0, 100001, 16);
        site_count_alloc(last);
        site_count_alloc(last);
        site_count_alloc(site_intern(300002, 0, 100001, 32));
    }
    CHECK(site_subsite_count() == count && site_table_bytes() == bytes);
    serial_t t;
    CHECK(site_get(first, &t, NULL, NULL) == 0 && t == 300001);
    site_census_begin();
    site_census_add(first);                             /* tracked 1001 resets ago: not counted */
    site_census_add(last);
    site_row *rows = NULL, tot;
    uint32_t n = 0;
    CHECK(site_rows(0, &rows, &n, &tot) == 0 && n == 2);
    CHECK(tot.alloc_objs == 3 && tot.live_objs == 1);   /* this period's allocations; 1 live */
    free(rows);
    site_table_free();
}
