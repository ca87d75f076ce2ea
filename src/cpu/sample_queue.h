/*
 * sample_queue: a bounded multi-producer, single-consumer queue of raw stack
 * samples, filled inside the SIGPROF handler and drained by the agent thread.
 *
 * Why this shape: a signal handler may not take locks or allocate, and several
 * threads' handlers can run at once on different CPUs. Each slot carries a
 * sequence number (D. Vyukov's bounded queue): a producer claims a slot with
 * one compare-and-swap, writes the stack straight into it (AsyncGetCallTrace
 * fills the slot's frame array, no copy), then publishes it with a release
 * store. When every slot is taken the producer gets NULL and counts the
 * sample as lost ("buffer_full"); it never waits. All memory is allocated
 * once, before any timer is armed.
 */
#ifndef HPROF_SAMPLE_QUEUE_H
#define HPROF_SAMPLE_QUEUE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/trace_builder.h"

typedef frame_ref sample_frame;      /* AsyncGetCallTrace writes these directly */

/* Frames that are not Java frames carry a tag in the method's top bits,
 * where no jmethodID (a user-space pointer) has any:
 * - a native frame: the address of an instruction (the interrupted PC for
 *   the top frame, a return address minus one below it, so that it lies
 *   inside the call), named later by the ELF symbols of its object;
 * - a stack that ends early: the reason, one of the sampler_stop_* codes,
 *   put below the last frame the walk could make. */
#define SAMPLE_TAG_MASK      (3ull << 62)
#define SAMPLE_TAG_NATIVE_PC (2ull << 62)
#define SAMPLE_TAG_STOP      (3ull << 62)
#define SAMPLE_NATIVE_FRAME(pc)  ((const void *)(uintptr_t)(SAMPLE_TAG_NATIVE_PC | (uint64_t)(pc)))
#define SAMPLE_STOP_FRAME(code)  ((const void *)(uintptr_t)(SAMPLE_TAG_STOP | (uint64_t)(uint32_t)(code)))
/* wall=: the thread's state (CPU_STATE_*), as a stop frame's code. */
#define SAMPLE_STATE_BASE 0x1000u
#define SAMPLE_STATE_FRAME(state) SAMPLE_STOP_FRAME(SAMPLE_STATE_BASE + (uint32_t)(state))
#define SAMPLE_FRAME_TAG(method) ((uint64_t)(uintptr_t)(method) & SAMPLE_TAG_MASK)
#define SAMPLE_FRAME_VALUE(method) ((uint64_t)(uintptr_t)(method) & ~SAMPLE_TAG_MASK)

/* A wall= sample of a thread that was inside a system call (blocked in a
 * read, a futex, a sleep: see sampler.c). */
#define SAMPLE_IN_SYSCALL 1u
/* A wall= sample of a thread that was ready to run but mostly waiting for
 * a CPU since its previous sample (sampler.c: was_runnable). */
#define SAMPLE_RUNNABLE 2u

/* Why a native walk ended early, in a SAMPLE_TAG_STOP frame (positive codes;
 * zero and negative ones are AsyncGetCallTrace's). */
enum {
    SAMPLER_STOP_READ_FAILED = 1,    /* a stack address could not be read */
    SAMPLER_STOP_NO_UNWIND_INFO,     /* code with no call-frame rule and no frame pointer */
    SAMPLER_STOP_DEPTH,              /* deeper than the walk may go */
    SAMPLER_STOP_UNKNOWN_CODE,       /* a return address in no known object (thread root or code
                                      * the agent does not know, told apart when named) */
};
/* A thread that is no Java thread, interrupted in code of no known object. */
#define SAMPLER_NO_NATIVE_FRAME (-11)

typedef struct raw_sample {
    atomic_size_t sequence;      /* queue bookkeeping: owned by the queue */
    uint32_t      thread_serial; /* who was sampled (0 if unknown) */
    uint32_t      carrier_serial;/* the carrier's, when thread_serial is a virtual thread it runs; else 0 */
    int32_t       num_frames;    /* > 0 frames; <= 0 an AsyncGetCallTrace failure code */
    uint32_t      weight;        /* intervals of CPU this sample stands for (>= 1) */
    int32_t       os_tid;        /* the kernel's thread id, for threads that are not Java
                                  * threads (thread_serial 0: named by the agent) */
    uint32_t      flags;         /* wall= samples: SAMPLE_IN_SYSCALL, SAMPLE_RUNNABLE */
    uint64_t      java_pc;       /* where the Java frames begin: the interrupted PC, or the
                                  * return address the native walk stopped at (in the code
                                  * cache when the thread runs Java); 0 if unknown. Tells
                                  * which compiled method or the interpreter the top Java
                                  * frames run in (cpu_collector_config.java_code). */
    sample_frame  frames[];      /* capacity = queue's max_frames */
} raw_sample;

typedef struct sample_queue {
    unsigned char *slots;        /* capacity slots of slot_size bytes */
    size_t         slot_size;
    size_t         mask;         /* capacity - 1 (capacity is a power of two) */
    uint32_t       max_frames;
    _Alignas(64) atomic_size_t enqueue_pos;
    _Alignas(64) size_t        dequeue_pos;   /* consumer only */
} sample_queue;

/* capacity is rounded up to a power of two (at least 2). 0 on success. */
int  sample_queue_init(sample_queue *q, size_t capacity, uint32_t max_frames);
void sample_queue_free(sample_queue *q);

/* Producer side, async-signal-safe: claim a slot (NULL when full), fill it, publish it. */
raw_sample *sample_queue_claim(sample_queue *q);
void        sample_queue_publish(sample_queue *q, raw_sample *s);

/* Consumer side (one thread at a time): the oldest published slot or NULL;
 * after reading it, hand it back with sample_queue_release. */
raw_sample *sample_queue_peek(sample_queue *q);
void        sample_queue_release(sample_queue *q, raw_sample *s);

#endif
