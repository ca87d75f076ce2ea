/*
 * instruction_counter: INSTRUCTION_START, written to the JVMPI
 * specification alone, enabled in JVM_OnLoad. It learns JvmpiCalls'
 * methods from CLASS_LOAD and, for evens, table and lookup, notes every
 * instruction and the branch information. At JVM_SHUT_DOWN writes to out=FILE:
 *   evens instructions N ifs EVALUATED/TAKEN ...   (each offset whose is_true
 *                                                  was sometimes set, sometimes
 *                                                  not: the conditional branches,
 *                                                  in the order first run)
 *   table keys K,K,... low L hi H                          (in the order run)
 *   lookup pairs I,I,... defaults D                        (chosen_pair_index of
 *                                                          the non-default ones)
 * Options: out=FILE
 */
#include <jvmpi.h>

#include "agent_support.h"

#include <stdio.h>
#include <string.h>

#define MAX_OFFSETS 256

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static FILE *out;
static jmethodID evens, table, lookup;
static long evens_instructions;
static struct { jint offset; long evaluated, taken; int is_branch; } offsets[MAX_OFFSETS];
static int n_offsets;
static char keys[512], pairs[512];
static jint table_low = -99, table_hi = -99;
static long defaults;

static void class_load(JVMPI_Event *e) {
    if (strcmp(e->u.class_load.class_name, "JvmpiCalls") != 0) return;
    for (jint i = 0; i < e->u.class_load.num_methods; i++) {
        const char *name = e->u.class_load.methods[i].method_name;
        if (strcmp(name, "evens") == 0) evens = e->u.class_load.methods[i].method_id;
        if (strcmp(name, "table") == 0) table = e->u.class_load.methods[i].method_id;
        if (strcmp(name, "lookup") == 0) lookup = e->u.class_load.methods[i].method_id;
    }
}

static void append(char *list, size_t size, long v) {
    size_t used = strlen(list);
    snprintf(list + used, size - used, "%s%ld", used ? "," : "", v);
}

/* The agent cannot tell an if from the event: it counts, per offset, how
 * often the instruction ran and how often is_true was set; an offset whose
 * is_true was sometimes set and sometimes not is a conditional branch. */
static void instruction(JVMPI_Event *e) {
    jmethodID m = e->u.instruction.method_id;
    if (m != evens && m != table && m != lookup) return;
    jvmpi->RawMonitorEnter(lock);
    if (m == evens) {
        evens_instructions++;
        int i = 0;
        while (i < n_offsets && offsets[i].offset != e->u.instruction.offset) i++;
        if (i == n_offsets && n_offsets < MAX_OFFSETS) offsets[n_offsets++].offset = e->u.instruction.offset;
        if (i < MAX_OFFSETS) {
            offsets[i].evaluated++;
            if (e->u.instruction.u.if_info.is_true) offsets[i].taken++;
        }
    }
    /* The switch instructions: the only ones in table and lookup with a
     * low..hi range or a pair index; their first instruction loads k, the
     * switch is the second. */
    if (m == table && e->u.instruction.offset == 1) {
        append(keys, sizeof keys, e->u.instruction.u.tableswitch_info.key);
        table_low = e->u.instruction.u.tableswitch_info.low;
        table_hi = e->u.instruction.u.tableswitch_info.hi;
    }
    if (m == lookup && e->u.instruction.offset == 1) {
        if (e->u.instruction.u.lookupswitch_info.is_default) defaults++;
        else append(pairs, sizeof pairs, e->u.instruction.u.lookupswitch_info.chosen_pair_index);
    }
    jvmpi->RawMonitorExit(lock);
}

static void shut_down(void) {
    jvmpi->RawMonitorEnter(lock);
    fprintf(out, "evens instructions %ld ifs", evens_instructions);
    for (int i = 0; i < n_offsets; i++)
        if (offsets[i].taken > 0 && offsets[i].taken < offsets[i].evaluated)
            fprintf(out, " %ld/%ld", offsets[i].evaluated, offsets[i].taken);
    fprintf(out, "\ntable keys %s low %d hi %d\n", keys, (int)table_low, (int)table_hi);
    fprintf(out, "lookup pairs %s defaults %ld\n", pairs, defaults);
    fflush(out);
    jvmpi->RawMonitorExit(lock);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type) {
    case JVMPI_EVENT_CLASS_LOAD: class_load(e); break;
    case JVMPI_EVENT_INSTRUCTION_START: instruction(e); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN: shut_down(); break;
    default: break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved) {
    (void)reserved;
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1) < 0) return JNI_ERR;
    if ((out = agent_open_out(options, "instruction_counter: options out=FILE")) == NULL) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("_instruction_counter");
    static const jint events[] = { JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_INSTRUCTION_START, JVMPI_EVENT_JVM_SHUT_DOWN };
    return agent_enable(jvmpi, events, AGENT_COUNT(events));
}
