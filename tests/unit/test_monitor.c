/* Unit tests: the monitor time table and the deadlock cycle finder. */
#include "unit.h"

#include <stdlib.h>

#include "monitor/deadlock.h"
#include "monitor/monitor_table.h"
#include "monitor/vthread_pending.h"

TEST(monitor_table_sums_and_orders)
{
    monitor_table *table = monitor_table_new();
    CHECK(table != NULL);
    CHECK(monitor_table_add(table, 300001, 0, 100001, BLOCK_ENTER, 5000000) == 0);
    CHECK(monitor_table_add(table, 300001, 0, 100001, BLOCK_ENTER, 7000000) == 0);
    CHECK(monitor_table_add(table, 300001, 0, 100001, BLOCK_WAIT, 1000000) == 0);   /* other kind: other row */
    CHECK(monitor_table_add(table, 300002, 0, 100002, BLOCK_PARK, 20000000) == 0);
    monitor_row *rows;
    uint32_t n;
    uint64_t total;
    CHECK(monitor_table_rows(table, &rows, &n, &total) == 0);
    CHECK(n == 3 && total == 33000000);
    CHECK(rows[0].trace == 300002 && rows[0].kind == BLOCK_PARK && rows[0].count == 1);
    CHECK(rows[1].trace == 300001 && rows[1].kind == BLOCK_ENTER && rows[1].count == 2 &&
          rows[1].nanos == 12000000);
    CHECK(rows[2].kind == BLOCK_WAIT && rows[2].nanos == 1000000);
    free(rows);
    CHECK_STR(block_kind_name(BLOCK_PARK), "park");
    monitor_table_free(table);
}

TEST(monitor_table_reset_zeroes_rows)
{
    monitor_table *table = monitor_table_new();
    CHECK(table != NULL);
    CHECK(monitor_table_add(table, 300001, 0, 100001, BLOCK_ENTER, 5000000) == 0);
    CHECK(monitor_table_add(table, 300002, 0, 100001, BLOCK_PARK, 1000) == 0);
    monitor_table_reset(table);
    monitor_row *rows;
    uint32_t n;
    uint64_t total;
    CHECK(monitor_table_rows(table, &rows, &n, &total) == 0);
    CHECK(n == 0 && total == 0);
    free(rows);
    CHECK(monitor_table_add(table, 300001, 0, 100001, BLOCK_ENTER, 3000) == 0);
    CHECK(monitor_table_rows(table, &rows, &n, &total) == 0);
    CHECK(n == 1 && total == 3000 && rows[0].count == 1 && rows[0].trace == 300001);
    free(rows);
    monitor_table_free(table);
}

/* cycles as a string "a,b|c,d" for easy comparison */
static void cycles_text(const waiter *g, uint32_t n, char *buf, size_t size, uint32_t *count)
{
    uint32_t cyc[64];
    *count = find_deadlocks(g, n, cyc);
    buf[0] = '\0';
    uint32_t at = 0;
    for (uint32_t c = 0; c < *count; c++) {
        uint32_t len = cyc[at++];
        if (c)
            strncat(buf, "|", size - strlen(buf) - 1);
        for (uint32_t i = 0; i < len; i++) {
            char num[16];
            snprintf(num, sizeof num, "%s%u", i ? "," : "", cyc[at++]);
            strncat(buf, num, size - strlen(buf) - 1);
        }
    }
}

TEST(deadlock_finds_every_cycle_and_nothing_else)
{
    char buf[256];
    uint32_t count;
    /* 7->5->6->5: cycle {5,6}; 7 waits on it but is not on it.
     * 3->2->3: cycle {2,3}. 9->10, 10 runs: no cycle. 4->4: a self-wait. */
    waiter g[] = { { 7, 5 }, { 5, 6 }, { 6, 5 }, { 3, 2 }, { 2, 3 }, { 9, 10 }, { 10, 0 }, { 4, 4 },
                   { 11, 99 } /* waits for a thread not in the graph */ };
    cycles_text(g, sizeof g / sizeof g[0], buf, sizeof buf, &count);
    CHECK(count == 3);
    CHECK_STR(buf, "2,3|4|5,6");
    waiter none[] = { { 1, 2 }, { 2, 3 }, { 3, 0 } };
    cycles_text(none, 3, buf, sizeof buf, &count);
    CHECK(count == 0);
    CHECK_STR(buf, "");
    waiter three[] = { { 30, 10 }, { 10, 20 }, { 20, 30 } };
    cycles_text(three, 3, buf, sizeof buf, &count);
    CHECK(count == 1);
    CHECK_STR(buf, "10,20,30");
    CHECK(find_deadlocks(NULL, 0, NULL) == 0);
}

TEST(vthread_pending_begin_end)
{
    vt_pending pending = VT_PENDING_INIT;
    vt_episode e = { 100, 300001, 100001, 7, BLOCK_PARK, 0, NULL }, got;
    CHECK(vt_pending_end(&pending, 5, VT_PARK, &got) == 0);           /* empty table */
    CHECK(vt_pending_begin(&pending, 5, VT_PARK, &e, NULL) == 0);
    e.start = 200;
    CHECK(vt_pending_begin(&pending, 5, VT_ENTER, &e, NULL) == 0);         /* same thread, other kind */
    CHECK(vt_pending_count(&pending) == 2);
    vt_pending other;                       /* a second table shares nothing with the first */
    vt_pending_init(&other);
    CHECK(vt_pending_count(&other) == 0 && vt_pending_end(&other, 5, VT_PARK, &got) == 0);
    CHECK(vt_pending_begin(&other, 5, VT_WAIT, &e, NULL) == 0 && vt_pending_count(&other) == 1);
    CHECK(vt_pending_end(&pending, 5, VT_WAIT, &got) == 0 && vt_pending_count(&pending) == 2);
    vt_pending_free(&other);
    CHECK(vt_pending_mark_pinned(&pending, 5, VT_PARK) == 1);
    CHECK(vt_pending_mark_pinned(&pending, 6, VT_PARK) == 0);
    CHECK(vt_pending_end(&pending, 5, VT_WAIT, &got) == 0);
    CHECK(vt_pending_end(&pending, 5, VT_PARK, &got) == 1 && got.start == 100 && got.pinned && got.stack == 7 &&
          got.kind == BLOCK_PARK);
    CHECK(vt_pending_end(&pending, 5, VT_PARK, &got) == 0);           /* ended once */
    CHECK(vt_pending_end(&pending, 5, VT_ENTER, &got) == 1 && got.start == 200 && !got.pinned);
    CHECK(vt_pending_count(&pending) == 0);
    vt_pending_free(&pending);
}

static void *keep_odd_refs(void *ctx, void *ref)
{
    ++*(int *)ctx;
    return (uintptr_t)ref % 2 ? ref : NULL;
}

/* The oldest pending episodes of the kinds asked for, with a ref, oldest
 * first; keep's NULL leaves one out; the count is of all matching. */
TEST(vthread_pending_oldest)
{
    vt_pending pending = VT_PENDING_INIT;
    vt_episode e = { 0, 1, 1, 0, BLOCK_PARK, 0, NULL };
    for (uint64_t t = 1; t <= 1000; t++) {
        e.start = (t * 7919) % 1000 + 1000;      /* distinct, shuffled */
        e.ref = (void *)(uintptr_t)t;
        CHECK(vt_pending_begin(&pending, t, t % 2 ? VT_PARK : VT_WAIT, &e, NULL) == 0);
    }
    e.ref = NULL;                                /* no ref: never listed */
    e.start = 1;
    CHECK(vt_pending_begin(&pending, 5000, VT_PARK, &e, NULL) == 0);
    vt_listed out[10];
    uint32_t matching = 0;
    int calls = 0;
    uint32_t n = vt_pending_oldest(&pending, 1u << VT_PARK, out, 10, &matching, keep_odd_refs, &calls);
    CHECK(n == 10 && matching == 500 && calls == 10);
    for (uint32_t i = 0; i < n; i++) {
        CHECK(out[i].what == VT_PARK && out[i].tid % 2 == 1 && (uintptr_t)out[i].ref == out[i].tid);
        CHECK(i == 0 || out[i].start > out[i - 1].start);
    }
    /* The oldest 10 of the odd tids: starts (t * 7919) % 1000 + 1000 over odd t. */
    uint64_t oldest = 0;
    for (uint64_t t = 1; t <= 1000; t += 2) {
        uint64_t s = (t * 7919) % 1000 + 1000;
        int smaller = 0;
        for (uint64_t u = 1; u <= 1000; u += 2)
            smaller += (u * 7919) % 1000 + 1000 < s;
        if (smaller == 9)
            oldest = s;
    }
    CHECK(out[9].start == oldest);
    calls = 0;
    n = vt_pending_oldest(&pending, (1u << VT_PARK) | (1u << VT_WAIT), out, 10, &matching, keep_odd_refs, &calls);
    CHECK(matching == 1000 && calls == 10 && n <= 10);   /* even refs left out */
    for (uint32_t i = 0; i < n; i++)
        CHECK((uintptr_t)out[i].ref % 2 == 1);
    vt_pending_free(&pending);
}

/* Many threads begin, some end, restart: every pending one is found with its
 * own start (backward-shift deletion keeps probe runs intact), and the
 * table stops at VT_PENDING_MAX * 3/4 entries, counting what it drops. */
TEST(vthread_pending_many_and_bounded)
{
    vt_pending pending = VT_PENDING_INIT;
    vt_episode e = { 0, 1, 1, 0, BLOCK_ENTER, 0, NULL }, got;
    for (uint64_t t = 1; t <= 20000; t++) {
        e.start = t * 10;
        CHECK(vt_pending_begin(&pending, t, VT_ENTER, &e, NULL) == 0);
    }
    for (uint64_t t = 1; t <= 20000; t += 3)
        CHECK(vt_pending_end(&pending, t, VT_ENTER, &got) == 1 && got.start == t * 10);
    e.start = 7;
    CHECK(vt_pending_begin(&pending, 2, VT_ENTER, &e, &got) == 1 && got.start == 20);   /* restart: replaces */
    uint32_t left = 0;
    for (uint64_t t = 1; t <= 20000; t++) {
        int was_pending = vt_pending_end(&pending, t, VT_ENTER, &got);
        if ((t - 1) % 3 == 0) {
            CHECK(!was_pending);
        } else {
            CHECK(was_pending && got.start == (t == 2 ? 7 : t * 10));
            left++;
        }
    }
    CHECK(left == 13333 && vt_pending_count(&pending) == 0 && vt_pending_dropped(&pending) == 0);
    uint32_t kept = 0;
    for (uint64_t t = 1; t <= VT_PENDING_MAX; t++)
        kept += vt_pending_begin(&pending, t, VT_PARK, &e, NULL) == 0;
    CHECK(kept == VT_PENDING_MAX / 4 * 3 - 1 || kept == VT_PENDING_MAX / 4 * 3);
    CHECK(vt_pending_count(&pending) == kept && vt_pending_dropped(&pending) == VT_PENDING_MAX - kept);
    vt_pending_free(&pending);
}
