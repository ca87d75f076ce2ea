/* idmap.c: see idmap.h. */
#include "idmap.h"

#include <stdlib.h>

static uint32_t slot_of(uint64_t key, uint32_t capacity)
{
    key ^= key >> 33;                     /* spread every key bit into the low bits */
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (uint32_t)key & (capacity - 1);
}

static uint32_t find_slot(const idmap *m, uint64_t key)
{
    uint32_t i = slot_of(key, m->capacity);
    while (m->ids[i] != 0 && m->keys[i] != key)
        i = (i + 1) & (m->capacity - 1);
    return i;
}

uint32_t idmap_get(const idmap *m, uint64_t key)
{
    if (m->capacity == 0)
        return 0;
    return m->ids[find_slot(m, key)];
}

static int grow(idmap *m)
{
    uint32_t cap = m->capacity ? m->capacity * 2 : 256;
    if (cap == 0)
        return -1;
    idmap bigger = { calloc(cap, sizeof *bigger.keys), calloc(cap, sizeof *bigger.ids), cap, m->count };
    if (bigger.keys == NULL || bigger.ids == NULL) {
        idmap_free(&bigger);
        return -1;
    }
    for (uint32_t i = 0; i < m->capacity; i++) {
        if (m->ids[i] == 0)
            continue;
        uint32_t j = find_slot(&bigger, m->keys[i]);
        bigger.keys[j] = m->keys[i];
        bigger.ids[j] = m->ids[i];
    }
    idmap_free(m);
    *m = bigger;
    return 0;
}

int idmap_put(idmap *m, uint64_t key, uint32_t id)
{
    if ((m->count + 1) * 2 > m->capacity && grow(m) != 0)
        return -1;
    uint32_t i = find_slot(m, key);
    if (m->ids[i] == 0)
        m->count++;
    m->keys[i] = key;
    m->ids[i] = id;
    return 0;
}

void idmap_remove(idmap *m, uint64_t key)
{
    if (m->capacity == 0)
        return;
    uint32_t hole = find_slot(m, key);
    if (m->ids[hole] == 0)
        return;
    m->ids[hole] = 0;
    m->count--;
    /* Each later entry of the run stays if its home slot is cyclically in
     * (hole, j]; else it moves into the hole, which moves to j. */
    for (uint32_t j = (hole + 1) & (m->capacity - 1); m->ids[j] != 0; j = (j + 1) & (m->capacity - 1)) {
        uint32_t home = slot_of(m->keys[j], m->capacity);
        int stays = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (stays)
            continue;
        m->keys[hole] = m->keys[j];
        m->ids[hole] = m->ids[j];
        m->ids[j] = 0;
        hole = j;
    }
}

void idmap_free(idmap *m)
{
    free(m->keys);
    free(m->ids);
    m->keys = NULL;
    m->ids = NULL;
    m->capacity = m->count = 0;
}
