/*
 * heap_tags: what the agent's JVMTI object tags mean. One jlong per object,
 * shared by every part of the agent, so the kinds must not overlap:
 *
 *   0                      untagged
 *   1 .. 2^32-1            a Class object; the tag is its class serial
 *                          (jvmti_support.c caches class serials this way)
 *   bit 63 set             an allocation heap=sites tracks, tagged for a heap
 *                          dump from the object store: low 30 bits are
 *                          its subsite (site_table.h), which gives its trace,
 *                          class and size
 *   bit 62 set, 63 clear   an object's id in a heap dump. Bits 32..61 keep
 *                          the subsite of a tracked object (0 if untracked)
 *                          and bits 0..31 a number unique within the dump, so
 *                          the tag itself is the object's id in the dump.
 *                          Normally only in the JVMTI environment the dump
 *                          creates for itself and then disposes of; when it
 *                          cannot have one, in the agent's own, and set back
 *                          to 0 after the dump (heap_dump.c).
 * Pure header: no JVMTI, tested in the unit tests.
 */
#ifndef HPROF_HEAP_TAGS_H
#define HPROF_HEAP_TAGS_H

#include <stdint.h>

#include "site_table.h"

#define HEAP_TAG_ALLOC_BIT  (UINT64_C(1) << 63)
#define HEAP_TAG_DUMP_BIT   (UINT64_C(1) << 62)
#define HEAP_TAG_CLASS_MAX  UINT64_C(0xFFFFFFFF)

static inline int64_t heap_tag_alloc(subsite_t s)
{
    return (int64_t)(HEAP_TAG_ALLOC_BIT | (uint64_t)(s & SUBSITE_MAX));
}

static inline int64_t heap_tag_dump(subsite_t s, uint32_t number)
{
    return (int64_t)(HEAP_TAG_DUMP_BIT | ((uint64_t)(s & SUBSITE_MAX) << 32) | number);
}

static inline int heap_tag_is_class(int64_t tag)
{
    return tag > 0 && (uint64_t)tag <= HEAP_TAG_CLASS_MAX;
}

static inline int heap_tag_is_dump(int64_t tag)
{
    return ((uint64_t)tag & (HEAP_TAG_ALLOC_BIT | HEAP_TAG_DUMP_BIT)) == HEAP_TAG_DUMP_BIT;
}

/* The subsite an allocation tag or a dump tag carries; 0 for any other tag. */
static inline subsite_t heap_tag_subsite(int64_t tag)
{
    uint64_t t = (uint64_t)tag;
    if (t & HEAP_TAG_ALLOC_BIT)
        return (subsite_t)(t & SUBSITE_MAX);
    if (t & HEAP_TAG_DUMP_BIT)
        return (subsite_t)((t >> 32) & SUBSITE_MAX);
    return 0;
}

#endif
