/* Unit tests: src/core/ref_table (the JVMPI layer's id -> weak reference
 * table): put, get, take, the bound, the sweep of a full stripe and how
 * often it may run. */
#include "unit.h"

#include "core/ref_table.h"

#include <stdint.h>

/* A "reference" is the key itself with its low bit set when it is gone. */
static void *ref_for(uint64_t key, int gone) { return (void *)(uintptr_t)(key | (uint64_t)(gone != 0)); }

static int drop_gone(void *ref, void *ctx)
{
    int *dropped = ctx;
    if (((uintptr_t)ref & 1) == 0)
        return 0;
    ++*dropped;
    return 1;
}

static int put(ref_table *t, uint64_t key, void *ref, int *dropped)
{
    ref_stripe *s = ref_table_lock(t, key);
    int r = ref_stripe_put(s, key, ref, drop_gone, dropped);
    ref_table_unlock(s);
    return r;
}

static void *get(ref_table *t, uint64_t key)
{
    ref_stripe *s = ref_table_lock(t, key);
    void *r = ref_stripe_get(s, key);
    ref_table_unlock(s);
    return r;
}

static void *take(ref_table *t, uint64_t key)
{
    ref_stripe *s = ref_table_lock(t, key);
    void *r = ref_stripe_take(s, key);
    ref_table_unlock(s);
    return r;
}

TEST(ref_table_put_get_take)
{
    ref_table t;
    ref_table_init(&t, 1u << 16);
    int dropped = 0;
    for (uint64_t k = 1; k <= 20000; k++)
        CHECK(put(&t, k * 8, ref_for(k * 8, 0), &dropped) == 0);
    CHECK(ref_table_count(&t) == 20000);
    CHECK(put(&t, 8 * 5, ref_for(8, 0), &dropped) == 1);           /* there: kept as it was */
    CHECK(get(&t, 8 * 5) == ref_for(8 * 5, 0));
    for (uint64_t k = 1; k <= 20000; k += 2)                       /* every other one leaves */
        CHECK(take(&t, k * 8) == ref_for(k * 8, 0));
    CHECK(take(&t, 8) == NULL);
    int all_right = 1;
    for (uint64_t k = 1; k <= 20000; k++)
        all_right &= get(&t, k * 8) == (k % 2 ? NULL : ref_for(k * 8, 0));
    CHECK(all_right);
    CHECK(ref_table_count(&t) == 10000);
    CHECK(get(&t, 8 * 20001) == NULL);
    CHECK(dropped == 0);
    ref_table_free(&t, NULL, NULL);
}

/* Counts its calls, drops nothing. */
static int count_calls(void *ref, void *ctx)
{
    (void)ref;
    ++*(int *)ctx;
    return 0;
}

/* Bounded: a stripe past its share refuses, unless a sweep makes room; a
 * stripe that stays full sweeps again only after a quarter of its size of puts. */
TEST(ref_table_bound_and_sweep)
{
    ref_table t;
    ref_table_init(&t, REF_TABLE_STRIPES * 16);                   /* 16 per stripe */
    int dropped = 0, refused = 0;
    uint64_t key = 8;
    for (int i = 0; i < 4000; i++, key += 8)                       /* live ones only: fills up */
        refused += put(&t, key, ref_for(key, 0), &dropped) < 0;
    CHECK(ref_table_count(&t) == REF_TABLE_STRIPES * 16);
    CHECK(refused == 4000 - REF_TABLE_STRIPES * 16);
    CHECK(dropped == 0);
    ref_table_free(&t, NULL, NULL);

    ref_table_init(&t, REF_TABLE_STRIPES * 16);
    dropped = 0;
    key = 8;
    refused = 0;
    for (int i = 0; i < 20000; i++, key += 8)                      /* all gone as soon as put */
        refused += put(&t, key, ref_for(key, 1), &dropped) < 0;
    /* A full stripe sweeps when due (5 puts after the last sweep here);
     * each sweep empties it, and it fills again in 16: none refused. */
    CHECK(refused == 0);
    CHECK(dropped + (int)ref_table_count(&t) == 20000 - refused);
    CHECK(ref_table_count(&t) <= REF_TABLE_STRIPES * 16);
    ref_table_free(&t, NULL, NULL);

    /* A full stripe of live references: its sweeps are spaced out (the
     * first refusal sweeps, then one per max / 4 + 1 puts). */
    ref_table_init(&t, REF_TABLE_STRIPES * 64);
    ref_stripe *s = &t.stripes[0];
    int calls = 0;
    for (uint64_t k = 8; s->count < s->max; k += 8) {
        ref_stripe *got = ref_table_lock(&t, k);
        if (got == s)
            CHECK(ref_stripe_put(s, k, ref_for(k, 0), count_calls, &calls) == 0);
        ref_table_unlock(got);
    }
    CHECK(calls == 0);
    CHECK(ref_stripe_may_put(s));                 /* full, but its first sweep is due */
    refused = 0;
    for (uint64_t k = 1u << 30, puts = 0; puts < 64; k += 8) {
        ref_stripe *got = ref_table_lock(&t, k);
        if (got == s) {
            refused += ref_stripe_put(s, k, ref_for(k, 0), count_calls, &calls) < 0;
            puts++;
        }
        ref_table_unlock(got);
    }
    CHECK(refused == 64);
    CHECK(calls == 4 * 64);                  /* puts 1, 18, 35 and 52 swept */
    CHECK(!ref_stripe_may_put(s));            /* 12 puts since the last sweep: not due */
    CHECK(s->count == s->max);
    ref_table_free(&t, NULL, NULL);
}

static int count_drop(void *ref, void *ctx)
{
    (void)ref;
    ++*(int *)ctx;
    return 1;
}

TEST(ref_table_free_hands_every_entry_back)
{
    ref_table t;
    ref_table_init(&t, 1000);
    int dropped = 0;
    for (uint64_t k = 1; k <= 500; k++)
        put(&t, k * 8, ref_for(k * 8, 0), &dropped);
    int freed = 0;
    ref_table_free(&t, count_drop, &freed);
    CHECK(freed == 500);
}
