/* sample_queue.c: see sample_queue.h. */
#include "sample_queue.h"

#include <stdlib.h>
#include <string.h>

static raw_sample *slot_at(const sample_queue *q, size_t pos)
{
    return (raw_sample *)(q->slots + (pos & q->mask) * q->slot_size);
}

int sample_queue_init(sample_queue *q, size_t capacity, uint32_t max_frames)
{
    memset(q, 0, sizeof *q);
    size_t cap = 2;
    while (cap < capacity)
        cap *= 2;
    /* Round the slot up to a cache line so neighbours do not share one. */
    size_t slot_size = sizeof(raw_sample) + (size_t)max_frames * sizeof(sample_frame);
    slot_size = (slot_size + 63) & ~(size_t)63;
    q->slots = aligned_alloc(64, cap * slot_size);
    if (q->slots == NULL)
        return -1;
    memset(q->slots, 0, cap * slot_size);
    q->slot_size = slot_size;
    q->mask = cap - 1;
    q->max_frames = max_frames;
    for (size_t i = 0; i < cap; i++)
        atomic_store_explicit(&slot_at(q, i)->sequence, i, memory_order_relaxed);
    atomic_store(&q->enqueue_pos, 0);
    q->dequeue_pos = 0;
    return 0;
}

void sample_queue_free(sample_queue *q)
{
    free(q->slots);
    memset(q, 0, sizeof *q);
}

raw_sample *sample_queue_claim(sample_queue *q)
{
    size_t pos = atomic_load_explicit(&q->enqueue_pos, memory_order_relaxed);
    for (;;) {
        raw_sample *s = slot_at(q, pos);
        size_t seq = atomic_load_explicit(&s->sequence, memory_order_acquire);
        intptr_t dif = (intptr_t)seq - (intptr_t)pos;
        if (dif == 0) {
            /* Free slot at our position: take it unless another producer did. */
            if (atomic_compare_exchange_weak_explicit(&q->enqueue_pos, &pos, pos + 1,
                                                      memory_order_relaxed, memory_order_relaxed))
                return s;
            /* pos was reloaded by the failed CAS */
        } else if (dif < 0) {
            return NULL;            /* the consumer has not released this slot: full */
        } else {
            pos = atomic_load_explicit(&q->enqueue_pos, memory_order_relaxed);
        }
    }
}

void sample_queue_publish(sample_queue *q, raw_sample *s)
{
    /* The slot was claimed at position p where sequence == p; p + 1 means "ready". */
    size_t seq = atomic_load_explicit(&s->sequence, memory_order_relaxed);
    (void)q;
    atomic_store_explicit(&s->sequence, seq + 1, memory_order_release);
}

raw_sample *sample_queue_peek(sample_queue *q)
{
    size_t pos = q->dequeue_pos;
    raw_sample *s = slot_at(q, pos);
    size_t seq = atomic_load_explicit(&s->sequence, memory_order_acquire);
    return seq == pos + 1 ? s : NULL;
}

void sample_queue_release(sample_queue *q, raw_sample *s)
{
    size_t pos = q->dequeue_pos++;
    /* Free again for the producer that comes round one lap later. */
    atomic_store_explicit(&s->sequence, pos + q->mask + 1, memory_order_release);
}
