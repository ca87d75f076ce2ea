/*
 * field_layout: where each value a JVMTI heap walk reports lands in a heap
 * dump's record. FollowReferences gives a field's value with JVMTI's field
 * index, which counts the fields of every interface the class implements
 * first, then its superclasses', then its own, statics and instance fields
 * alike; both dump formats this project writes (HPROF's INSTANCE DUMP and
 * JVMPI's GC_INSTANCE_DUMP) want the instance values in another order: the
 * class's own fields, then its superclass's, and so on up to Object, each
 * class's in declaration order, and the statics by themselves. A layout
 * maps the one to the other.
 *
 * Shared by heap=dump (heap_dump.c) and the JVMPI layer's heap dumps
 * (src/jvmpi/heap_dumps.c). Each keeps its classes in a table of its own
 * and names them by a key of its own (a class serial, an index), which the
 * layouts use for superclasses and interfaces: fl_classes says how to find
 * one. Reading a class uses JVMTI and JNI; looking a slot up uses neither
 * (it is done inside heap walk callbacks).
 */
#ifndef HPROF_FIELD_LAYOUT_H
#define HPROF_FIELD_LAYOUT_H

#include <jni.h>
#include <jvmti.h>
#include <stdint.h>

/* Where JVMTI field index i (minus the class's interface base) lands. */
typedef struct fl_slot {
    int32_t pos;          /* instance field: position in the dump's value order; static: index in statics */
    uint8_t type;         /* HB_* (the JVM's basic type codes, shared with JVMPI's) */
    uint8_t is_static;
    uint8_t own;          /* declared by this class (statics of superclasses are not ours) */
} fl_slot;

typedef struct fl_field {
    const char *name;     /* owned by the class that declares the field */
    uint8_t     type;     /* HB_* */
} fl_field;

typedef struct fl_class {
    uint32_t    super;           /* key of the superclass; 0 for Object; Object for arrays and interfaces */
    int         is_interface, is_array;
    uint8_t     elem_type;       /* arrays: HB_* of the elements */
    uint32_t   *ifaces;          /* keys of the direct superinterfaces */
    uint32_t    n_ifaces;
    int         unprepared;      /* fields unknown (GetClassFields: CLASS_NOT_PREPARED) */
    uint32_t    n_fields;        /* declared fields, static and instance (JVMTI counts both) */
    uint32_t    n_if;            /* JVMTI index base: fields of all interfaces it implements */
    fl_slot    *slots;           /* n_all entries: fields of Object .. this class */
    uint32_t    n_all;
    fl_field   *pos;             /* npos instance fields, dump order: own first, then super's */
    uint32_t    npos, n_own_pos;
    uint32_t    value_len;       /* bytes of an instance's values (hb_type_size: ids of 8 bytes) */
    fl_field   *statics;         /* own statics, in declaration order */
    uint32_t    n_statics;
    int         laid_out;
    uint32_t    mark;
} fl_class;

/* The caller's table of classes. */
typedef struct fl_classes {
    fl_class *(*get)(void *ctx, uint32_t key);            /* a class read already, NULL if none */
    uint32_t  (*key_of)(void *ctx, JNIEnv *jni, jclass k); /* 0 for a class not in the table */
    void       *ctx;
} fl_classes;

/* Reads a class's declaration (super, interfaces, fields). 0, or -1 when
 * JVMTI fails or memory runs out. */
int  field_layout_read(JNIEnv *jni, jvmtiEnv *jvmti, const fl_classes *all, jclass k, fl_class *c);
/* Once every class is read: completes c's layout from its superclass's
 * (recursively). stamp: 0 at first, the same variable for every class. */
int  field_layout_complete(const fl_classes *all, fl_class *c, uint32_t *stamp);
/* The slot of a value reported at a JVMTI field index, NULL if it fits no
 * field of c of that type (a mismatch, for the caller to count). */
const fl_slot *field_layout_slot(const fl_class *c, jint index, uint8_t type, int is_static);
void field_layout_free(fl_class *c);
/* A primitive value a heap walk reports, as raw bits in its size's low
 * bytes (float and double as their IEEE bits). */
uint64_t field_layout_bits(jvalue v, jvmtiPrimitiveType t);

#endif
