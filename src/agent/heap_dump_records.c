/* heap_dump_records: heap=dump's format=b records of the shared tables
 * (UTF8, LOAD CLASS, STACK FRAME, STACK TRACE, START and END THREAD) not
 * written yet, for the walk's dump and the JVM's (heap_dump.h). */
#include "heap_dump_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/tables.h"
#include "jvmti_support.h"

/* ------------------------------------------------- binary table records */

serial_t heap_dump_internal_name(serial_t class_serial)
{
    /* LOAD CLASS names are in the JVM's internal form: java/lang/String, [I. */
    const char *sig = class_signature(agent_tables(), class_serial);
    if (sig == NULL)
        return 0;
    size_t n = strlen(sig);
    if (sig[0] == 'L' && n >= 2 && sig[n - 1] == ';') {
        char buf[4096];
        if (n - 2 >= sizeof buf)
            return string_intern(agent_tables(), sig);
        memcpy(buf, sig + 1, n - 2);
        buf[n - 2] = '\0';
        return string_intern(agent_tables(), buf);
    }
    return string_intern(agent_tables(), sig);
}

/* UTF8 records for the strings interned since the last call. */
void heap_dump_write_new_strings(hb_writer *w)
{
    uint32_t nstrings = string_count(agent_tables());
    for (uint32_t i = w->tables_written.strings; i < nstrings; i++) {
        const char *s = string_get(agent_tables(), STRING_SERIAL_BASE + i);
        if (s)
            hb_utf8(w, STRING_ID(STRING_SERIAL_BASE + i), s);
    }
    w->tables_written.strings = nstrings;
}

/* A thread's name gets a UTF8 record of its own, written just before its
 * START THREAD, under an id made from the thread's serial: interning every
 * name in the string table would make it grow with each thread a dump names,
 * for as long as the JVM runs (thread=n forgets ended threads, a string
 * table never forgets). Groups are few, interned by thread_add; one new
 * since the UTF8 records above were written gets its record now. */
static void write_thread_start(void *ctx, serial_t serial, const thread_info *ti)
{
    hb_writer *w = ctx;
    serial_t group = string_intern(agent_tables(), ti->group ? ti->group : "");
    if (group >= STRING_SERIAL_BASE + w->tables_written.strings)
        heap_dump_write_new_strings(w);
    hb_utf8(w, THREAD_NAME_ID(serial), ti->name);
    hb_start_thread(w, serial, ti->object_id, EMPTY_TRACE_SERIAL, THREAD_NAME_ID(serial), STRING_ID(group), 0);
}

static void write_thread_end(void *ctx, serial_t serial)
{
    hb_end_thread(ctx, serial);
}

/* The trace that loaded a class (class_loads.c) if the file has its STACK
 * TRACE or TRACE record (serials below TRACE_SERIAL_BASE + traces_in_file);
 * else the empty trace: a class loaded while the records were written. */
serial_t heap_dump_load_trace_written(serial_t class_serial, uint32_t traces_in_file)
{
    serial_t trace = class_load_trace(agent_tables(), class_serial);
    return trace && trace < TRACE_SERIAL_BASE + traces_in_file ? trace : EMPTY_TRACE_SERIAL;
}

uint32_t heap_dump_jvm_serial_of(const jvm_classes *jvm, serial_t class_serial)
{
    uint32_t i = class_serial - CLASS_SERIAL_BASE;
    return jvm && class_serial >= CLASS_SERIAL_BASE && i < jvm->n ? jvm->serial[i] : 0;
}

/* Whether class i of ours gets a LOAD CLASS record: always but where the
 * JVM's dump names the classes; there when that one is not there and a
 * frame names it. */
static int gets_load_class(const jvm_classes *jvm, const unsigned char *in_frame, uint32_t i)
{
    return jvm == NULL || (heap_dump_jvm_serial_of(jvm, CLASS_SERIAL_BASE + i) == 0 && in_frame && in_frame[i]);
}

/* The records of heap_dump_binary_new_records. With jvm (the JVM's
 * dump is the file's heap dump, and names the classes it has), no LOAD
 * CLASS record of ours for the classes it names: frames name those by its
 * serials, and a LOAD CLASS of ours goes only to a class a frame names
 * that it does not (or not for sure). With objects (a walk's dump being
 * written), the LOAD CLASS records give the ids that dump gives the
 * classes' Class objects. */
void heap_dump_write_new_records(hb_writer *w, const jvm_classes *jvm, const walk *objects)
{
    uint32_t nclasses = class_count(agent_tables()), nframes = frame_count(agent_tables()), ntraces = trace_count(agent_tables());
    unsigned char *in_frame = jvm ? calloc(nclasses ? nclasses : 1, 1) : NULL;
    /* Names first: every record below refers to its names by id. */
    for (uint32_t i = w->tables_written.frames; i < nframes; i++) {
        serial_t m;
        int32_t line;
        method_info mi;
        if (frame_get(agent_tables(), FRAME_SERIAL_BASE + i, &m, &line) == 0 && method_get(agent_tables(), m, &mi) == 0) {
            string_intern(agent_tables(), mi.name);
            string_intern(agent_tables(), mi.signature);
            string_intern(agent_tables(), mi.source_file ? mi.source_file : "Unknown");
            if (in_frame && mi.class_serial >= CLASS_SERIAL_BASE && mi.class_serial - CLASS_SERIAL_BASE < nclasses)
                in_frame[mi.class_serial - CLASS_SERIAL_BASE] = 1;
        }
    }
    serial_t *names = calloc(nclasses > w->tables_written.classes ? nclasses - w->tables_written.classes : 1, sizeof *names);
    for (uint32_t i = w->tables_written.classes; names && i < nclasses; i++)
        if (gets_load_class(jvm, in_frame, i))
            names[i - w->tables_written.classes] = heap_dump_internal_name(CLASS_SERIAL_BASE + i);
    heap_dump_write_new_strings(w);
    if (!w->tables_written.empty_trace) {
        hb_stack_trace(w, EMPTY_TRACE_SERIAL, 0, NULL, 0);
        w->tables_written.empty_trace = 1;
    }
    for (uint32_t i = w->tables_written.classes; names && i < nclasses; i++)
        if (names[i - w->tables_written.classes])
            hb_load_class(w, CLASS_SERIAL_BASE + i, heap_dump_class_object_id(objects, CLASS_SERIAL_BASE + i),
                          heap_dump_load_trace_written(CLASS_SERIAL_BASE + i, ntraces),
                          STRING_ID(names[i - w->tables_written.classes]));
    /* With jvm, the other classes are not written yet: a walk's
     * dump later writes them all. */
    if (names && jvm == NULL)
        w->tables_written.classes = nclasses;
    free(names);
    free(in_frame);
    for (uint32_t i = w->tables_written.frames; i < nframes; i++) {
        serial_t m;
        int32_t line;
        method_info mi;
        if (frame_get(agent_tables(), FRAME_SERIAL_BASE + i, &m, &line) != 0 || method_get(agent_tables(), m, &mi) != 0)
            continue;
        /* HPROF binary lines: > 0 a line, -1 unknown, -3 native. */
        hb_stack_frame(w, FRAME_ID(FRAME_SERIAL_BASE + i), STRING_ID(string_intern(agent_tables(), mi.name)),
                       STRING_ID(string_intern(agent_tables(), mi.signature)),
                       STRING_ID(string_intern(agent_tables(), mi.source_file ? mi.source_file : "Unknown")),
                       heap_dump_jvm_serial_of(jvm, mi.class_serial) ? heap_dump_jvm_serial_of(jvm, mi.class_serial) : mi.class_serial,
                       line);
    }
    w->tables_written.frames = nframes;
    for (uint32_t i = w->tables_written.traces; i < ntraces; i++) {
        serial_t thread;
        const serial_t *frames;
        uint32_t n;
        if (trace_get(agent_tables(), TRACE_SERIAL_BASE + i, &thread, &frames, &n) != 0)
            continue;
        uint64_t ids[256];
        uint32_t k = n < 256 ? n : 256;
        for (uint32_t j = 0; j < k; j++)
            ids[j] = FRAME_ID(frames[j]);
        hb_stack_trace(w, TRACE_SERIAL_BASE + i, thread, ids, k);
    }
    w->tables_written.traces = ntraces;
    /* Out of memory: the thread records wait for the next dump. */
    (void)thread_records_write(agent_tables(), &w->tables_written.threads, write_thread_start, write_thread_end, w);
}

void heap_dump_binary_new_records(hb_writer *w)
{
    heap_dump_write_new_records(w, NULL, NULL);
}
