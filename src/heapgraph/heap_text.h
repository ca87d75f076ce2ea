/*
 * heap_text: `hprof heap` on HPROF text heap dumps (format=a: HEAP DUMP
 * BEGIN .. END with ROOT, CLS, OBJ and ARR records, THREAD START and TRACE
 * records around them). The text is turned into an HPROF binary heap dump
 * (UTF8, LOAD CLASS, STACK FRAME, STACK TRACE, HEAP DUMP SEGMENTs) that
 * heap_graph_read reads as it reads any other, so that every report
 * (histogram, dominators, paths, sites, suspects, page, baseline) is the
 * binary one's. What the binary form cannot carry is put into the graph
 * after it is read: each object's size as the text gives it (sz=), and the
 * threads' names from THREAD START (a text dump has no String contents).
 *
 * The text is untrusted: a cut or corrupt one is refused with the file, the
 * line and what is wrong, never read past its end; what it makes is bounded
 * by its size (max_out).
 */
#ifndef HPROF_HEAP_TEXT_H
#define HPROF_HEAP_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "heap_file.h"
#include "heap_graph.h"

/* Whether bytes are an HPROF text file ("JAVA PROFILE 1.0.x, created ..."). */
int heap_text_is(const unsigned char *bytes, size_t len);

/* What the binary form does not carry, kept from the text for the graph. */
typedef struct heap_text_facts {
    uint64_t *size_ids;             /* objects' ids and... */
    uint32_t *sizes;                /* ...their sizes (sz=), in text order */
    uint32_t  nsizes;
    hg_thread_name *threads;        /* THREAD START: serial and name, by serial */
    uint32_t  nthreads;
    char     *thread_text;          /* the names' characters */
    uint32_t  heap_dumps;           /* how many the text holds (the last is read) */
} heap_text_facts;

/* Writes the binary form of text[0..len) to out, at most max_out bytes:
 * 0, or -1 with the reason in err ("PATH: line N: what"). */
int heap_text_convert(const unsigned char *text, size_t len, const char *path, FILE *out, uint64_t max_out,
                      heap_text_facts *facts, hg_progress progress, void *progress_ctx, char *err, size_t errlen);
/* Puts the facts into the graph read from that binary form (the graph
 * takes the thread names). 0, or -1 with the reason in err. */
int heap_text_apply(heap_graph *g, heap_text_facts *facts, char *err, size_t errlen);
void heap_text_facts_free(heap_text_facts *facts);

/* All of the above: the graph of the text dump, its binary form in *bin (an
 * unlinked temporary file, mapped: to outlive the graph, heap_file_close
 * after heap_graph_free), or NULL with the reason in err. */
heap_graph *heap_text_read(const unsigned char *text, size_t len, const char *path, hg_progress progress,
                           void *progress_ctx, heap_file *bin, char *err, size_t errlen);
/* The same with the binary form in memory (*binary, malloc'd, to free after
 * the graph), at most max_out bytes of it: for small dumps (tests, fuzzing). */
heap_graph *heap_text_read_memory(const unsigned char *text, size_t len, const char *path, uint64_t max_out,
                                  unsigned char **binary, char *err, size_t errlen);

#endif
