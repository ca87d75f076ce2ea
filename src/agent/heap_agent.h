/*
 * heap_agent: heap=sites, exact or sampled, and heap=dump's JVMTI side.
 *
 * Exact (heap_sample=0, the default): tracker_agent inserts calls at every
 * allocation (Object.<init> and the array instructions); objects the VM
 * allocates itself (reflection, clone, JNI) come from VMObjectAlloc. Each
 * object goes in the object store (object_store.h) with its subsite
 * (site_table.h); before a report the agent forces a GC and counts the
 * store's objects left in the heap, so live counts are exact at that moment.
 *
 * The collectors heap_sites_collector and heap_dump_collector (collector.h)
 * are defined in heap_agent.c.
 *
 * Sampled (heap_sample=BYTES): no rewriting; JVMTI SampledObjectAlloc picks
 * about one allocation per BYTES allocated by each thread, and the report's
 * counts are estimates (site_rows).
 */
#ifndef HPROF_HEAP_AGENT_H
#define HPROF_HEAP_AGENT_H

#include <jni.h>
#include <jvmti.h>
#include <stdint.h>
#include <stdio.h>

#include "../heap/site_table.h"
#include "../output/text_writer.h"

typedef struct heap_config {
    int      sites;              /* heap=sites or all */
    int      dump;               /* heap=dump or all */
    uint64_t sample_interval;    /* heap_sample=: 0 = exact */
    int      depth, lineno, per_thread;
    double   cutoff;
} heap_config;

/* ThreadEnd, on the ending thread: drops what the thread kept. */
void heap_agent_thread_end(JNIEnv *jni);

/* For a heap dump: every object heap=sites tracks that is still in the heap
 * gets its allocation tag (heap_tags.h) in `to`. */
void heap_agent_tag_tracked(JNIEnv *jni, jvmtiEnv *to);

/* The same objects, each as its JNI weak reference and subsite (after a
 * forced GC: object_store_each). */
void heap_agent_each_tracked(JNIEnv *jni, void (*visit)(void *arg, void *handle, subsite_t s), void *arg);

#endif
