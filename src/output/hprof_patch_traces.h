/*
 * hprof_patch_traces: gives the objects of an HPROF binary heap dump the
 * trace serials of their allocations, in place. heap=all's fast dump
 * (src/agent/heap_all_dump.c) has the JVM's own dumper write the heap (every
 * object with the JVM's empty trace) and then sets, for each object the agent
 * tracked, the stack trace serial of its INSTANCE DUMP, OBJ ARRAY DUMP or
 * PRIM ARRAY DUMP (the u4 right after the object id).
 *
 * The file is read as it lies (the caller maps it): HEAP DUMP and HEAP DUMP
 * SEGMENT records are taken apart into their sub-records; every other record
 * is skipped by its length. Each object record is shown to a callback, which
 * says which trace to set, none, or that the whole patch must be abandoned
 * (the object is not what the caller expected: its ids are not this dump's).
 * Pure C: unit-tested and fuzzed on bytes.
 */
#ifndef HPROF_PATCH_TRACES_H
#define HPROF_PATCH_TRACES_H

#include <stddef.h>
#include <stdint.h>

enum hpt_kind { HPT_INSTANCE = 0x21, HPT_OBJ_ARRAY = 0x22, HPT_PRIM_ARRAY = 0x23 };

typedef struct hpt_object {
    uint64_t id;
    int      kind;               /* enum hpt_kind */
    uint64_t class_id;           /* an instance's class, an object array's array class; 0 for primitive arrays */
    uint8_t  elem_type;          /* primitive arrays: HPROF basic type (4 boolean ... 11 long) */
    uint32_t length;             /* arrays: elements; instances: bytes of field values */
} hpt_object;

/* 1: set *trace; 0: leave the object's; -1: abandon (nothing more is read
 * or written; what was set stays set, so the caller drops the file). */
typedef int (*hpt_trace_fn)(void *ctx, const hpt_object *o, uint32_t *trace);

typedef struct hpt_result {
    uint64_t    objects;         /* object records seen */
    uint64_t    patched;         /* trace serials set */
    uint64_t    offset;          /* where reading stopped, on failure */
    const char *what;            /* what was wrong there, on failure */
} hpt_result;

/* Over the whole file in data (size bytes, writable). 0 when every record
 * was read; 1 when it is not an HPROF binary file with 8-byte ids (nothing
 * changed); -1 when it is malformed (r->what, r->offset); -2 when the
 * callback abandoned the patch (r->offset: that object's record). */
int hpt_patch_traces(unsigned char *data, size_t size, hpt_trace_fn trace_of, void *ctx, hpt_result *r);

/* The same on the file fd, mapped shared (its pages written back by the
 * kernel): as above, or -3 when it cannot be mapped (errno). */
int hpt_patch_file(int fd, hpt_trace_fn trace_of, void *ctx, hpt_result *r);

#endif
