/* ref_table.c: see ref_table.h. */
#include "ref_table.h"

#include <stdlib.h>

void ref_table_init(ref_table *t, uint32_t max_entries)
{
    for (int i = 0; i < REF_TABLE_STRIPES; i++) {
        ref_stripe *s = &t->stripes[i];
        *s = (ref_stripe){ .max = (max_entries + REF_TABLE_STRIPES - 1) / REF_TABLE_STRIPES };
        pthread_mutex_init(&s->lock, NULL);
    }
}

void ref_table_free(ref_table *t, ref_drop_fn drop, void *ctx)
{
    for (int i = 0; i < REF_TABLE_STRIPES; i++) {
        ref_stripe *s = &t->stripes[i];
        for (uint32_t j = 0; drop != NULL && j < s->count; j++)
            drop(s->refs[j], ctx);
        idmap_free(&s->index);
        free(s->keys);
        free(s->refs);
        pthread_mutex_destroy(&s->lock);
        *s = (ref_stripe){ 0 };
    }
}

ref_stripe *ref_table_lock(ref_table *t, uint64_t key)
{
    /* JVMPI ids are multiples of 8 handed out in order: the multiply
     * spreads neighbours over the stripes, the top bits pick one. */
    uint64_t h = (key >> 3) * 0x9E3779B97F4A7C15ull;
    ref_stripe *s = &t->stripes[h >> 58];
    pthread_mutex_lock(&s->lock);
    return s;
}

void ref_table_unlock(ref_stripe *s) { pthread_mutex_unlock(&s->lock); }

void *ref_stripe_get(const ref_stripe *s, uint64_t key)
{
    uint32_t at = idmap_get(&s->index, key);
    return at ? s->refs[at - 1] : NULL;
}

/* Position at (0-based) leaves: the last entry moves into it. */
static void remove_at(ref_stripe *s, uint32_t at)
{
    idmap_remove(&s->index, s->keys[at]);
    uint32_t last = --s->count;
    if (at != last) {
        s->keys[at] = s->keys[last];
        s->refs[at] = s->refs[last];
        idmap_put(&s->index, s->keys[at], at + 1);    /* replaces: no memory needed */
    }
}

static void sweep(ref_stripe *s, ref_drop_fn drop_if_gone, void *ctx)
{
    s->swept = 1;
    s->puts_since_sweep = 0;
    for (uint32_t j = s->count; j-- > 0;)
        if (drop_if_gone(s->refs[j], ctx))
            remove_at(s, j);
}

static int room(ref_stripe *s)
{
    if (s->count < s->capacity)
        return 0;
    uint32_t cap = s->capacity ? s->capacity * 2 : 64;
    if (cap > s->max)
        cap = s->max;
    uint64_t *keys = realloc(s->keys, cap * sizeof *keys);
    if (keys == NULL)
        return -1;
    s->keys = keys;
    void **refs = realloc(s->refs, cap * sizeof *refs);
    if (refs == NULL)
        return -1;
    s->refs = refs;
    s->capacity = cap;
    return 0;
}

static int sweep_due(const ref_stripe *s, uint32_t puts)
{
    return !s->swept || puts >= s->max / 4 + 1;
}

int ref_stripe_may_put(const ref_stripe *s)
{
    return s->count < s->max || sweep_due(s, s->puts_since_sweep + 1);
}

int ref_stripe_put(ref_stripe *s, uint64_t key, void *ref, ref_drop_fn drop_if_gone, void *ctx)
{
    if (idmap_get(&s->index, key) != 0)
        return 1;
    s->puts_since_sweep++;
    if (s->count >= s->max && drop_if_gone != NULL && sweep_due(s, s->puts_since_sweep))
        sweep(s, drop_if_gone, ctx);
    if (s->count >= s->max || room(s) != 0)
        return -1;
    if (idmap_put(&s->index, key, s->count + 1) != 0)
        return -1;
    s->keys[s->count] = key;
    s->refs[s->count] = ref;
    s->count++;
    return 0;
}

void *ref_stripe_take(ref_stripe *s, uint64_t key)
{
    uint32_t at = idmap_get(&s->index, key);
    if (at == 0)
        return NULL;
    void *ref = s->refs[at - 1];
    remove_at(s, at - 1);
    return ref;
}

uint64_t ref_table_count(ref_table *t)
{
    uint64_t n = 0;
    for (int i = 0; i < REF_TABLE_STRIPES; i++) {
        pthread_mutex_lock(&t->stripes[i].lock);
        n += t->stripes[i].count;
        pthread_mutex_unlock(&t->stripes[i].lock);
    }
    return n;
}
