/* trace_cache.c: see trace_cache.h. */
#include "trace_cache.h"

#include <stdlib.h>
#include <string.h>

/* Slot i's frames are frames[i * max_frames ...]; a slot with trace 0 is empty. */
typedef struct slot {
    uint64_t hash;
    serial_t trace;
    serial_t thread_serial;
    uint32_t n;
    stack_id stack;
} slot;

struct trace_cache {
    uint32_t   mask;
    uint32_t   max_frames;
    slot      *slots;
    frame_ref *frames;
};

trace_cache *trace_cache_new(unsigned log2_slots, uint32_t max_frames)
{
    if (log2_slots > 20 || max_frames == 0 || max_frames > TRACE_BUILDER_MAX_FRAMES)
        return NULL;
    trace_cache *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    size_t slots = (size_t)1 << log2_slots;
    c->mask = (uint32_t)(slots - 1);
    c->max_frames = max_frames;
    c->slots = calloc(slots, sizeof *c->slots);
    c->frames = calloc(slots * max_frames, sizeof *c->frames);
    if (c->slots == NULL || c->frames == NULL) {
        trace_cache_free(c);
        return NULL;
    }
    return c;
}

void trace_cache_free(trace_cache *c)
{
    if (c == NULL)
        return;
    free(c->slots);
    free(c->frames);
    free(c);
}

/* FNV-1a over the frames' fields (not their bytes: frame_ref has padding). */
static uint64_t frames_hash(serial_t thread_serial, const frame_ref *frames, uint32_t n)
{
    uint64_t h = 0xcbf29ce484222325ull ^ thread_serial;
    for (uint32_t i = 0; i < n; i++) {
        h = (h ^ (uint64_t)(uintptr_t)frames[i].method) * 0x100000001b3ull;
        h = (h ^ (uint32_t)frames[i].bci) * 0x100000001b3ull;
    }
    return h ^ (h >> 29);
}

static int same_frames(const frame_ref *a, const frame_ref *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (a[i].method != b[i].method || a[i].bci != b[i].bci)
            return 0;
    return 1;
}

serial_t trace_cache_get(const trace_cache *c, serial_t thread_serial, const frame_ref *frames, uint32_t n,
                         stack_id *stack)
{
    if (c == NULL || n > c->max_frames)
        return 0;
    uint64_t h = frames_hash(thread_serial, frames, n);
    const slot *s = &c->slots[h & c->mask];
    if (s->trace == 0 || s->hash != h || s->n != n || s->thread_serial != thread_serial ||
        !same_frames(&c->frames[(size_t)(h & c->mask) * c->max_frames], frames, n))
        return 0;
    if (stack)
        *stack = s->stack;
    return s->trace;
}

void trace_cache_put(trace_cache *c, serial_t thread_serial, const frame_ref *frames, uint32_t n, serial_t trace,
                     stack_id stack)
{
    if (c == NULL || n > c->max_frames || trace == 0)
        return;
    uint64_t h = frames_hash(thread_serial, frames, n);
    size_t i = h & c->mask;
    memcpy(&c->frames[i * c->max_frames], frames, n * sizeof *frames);
    c->slots[i] = (slot){ h, trace, thread_serial, n, stack };
}
