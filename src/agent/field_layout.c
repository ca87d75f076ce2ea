/* field_layout: see field_layout.h. */
#include "field_layout.h"

#include <stdlib.h>
#include <string.h>

#include "../output/hprof_binary.h"

static void deallocate(jvmtiEnv *jvmti, void *p)
{
    if (p != NULL)
        (*jvmti)->Deallocate(jvmti, (unsigned char *)p);
}

/* Super and interfaces; arrays and interfaces extend Object, as in the JVM's own dumps. */
static void read_supers(JNIEnv *jni, jvmtiEnv *jvmti, const fl_classes *all, jclass k, fl_class *c)
{
    jclass super = (*jni)->GetSuperclass(jni, k);
    if (super) {
        c->super = all->key_of(all->ctx, jni, super);
        (*jni)->DeleteLocalRef(jni, super);
    } else if (c->is_array || c->is_interface) {
        jclass object = (*jni)->FindClass(jni, "java/lang/Object");
        if (object) c->super = all->key_of(all->ctx, jni, object);
        if (object) (*jni)->DeleteLocalRef(jni, object);
    }
    if (c->is_array)
        return;
    jint ni = 0;
    jclass *ifs = NULL;
    if ((*jvmti)->GetImplementedInterfaces(jvmti, k, &ni, &ifs) != JVMTI_ERROR_NONE)
        return;
    c->ifaces = calloc(ni ? (size_t)ni : 1, sizeof *c->ifaces);
    for (jint i = 0; i < ni; i++) {
        if (c->ifaces) c->ifaces[c->n_ifaces++] = all->key_of(all->ctx, jni, ifs[i]);
        (*jni)->DeleteLocalRef(jni, ifs[i]);
    }
    deallocate(jvmti, ifs);
}

static int read_fields(jvmtiEnv *jvmti, jclass k, fl_class *c)
{
    jint nf = 0;
    jfieldID *fields = NULL;
    jvmtiError err = (*jvmti)->GetClassFields(jvmti, k, &nf, &fields);
    if (err == JVMTI_ERROR_CLASS_NOT_PREPARED) {
        /* Loaded, not linked: yet objects of it can exist, in the heap
         * archived by class data sharing. They are written without fields. */
        c->unprepared = 1;
        return 0;
    }
    if (err != JVMTI_ERROR_NONE)
        return -1;
    /* Own fields only here; field_layout_complete puts the superclass's around them. */
    c->n_fields = (uint32_t)nf;
    c->slots = calloc(nf ? (size_t)nf : 1, sizeof *c->slots);
    c->pos = calloc(nf ? (size_t)nf : 1, sizeof *c->pos);
    c->statics = calloc(nf ? (size_t)nf : 1, sizeof *c->statics);
    int rc = c->slots && c->pos && c->statics ? 0 : -1;
    for (jint i = 0; i < nf && rc == 0; i++) {
        char *name = NULL, *sig = NULL;
        jint mods = 0;
        char *copy = NULL;
        if ((*jvmti)->GetFieldName(jvmti, k, fields[i], &name, &sig, NULL) == JVMTI_ERROR_NONE &&
            (*jvmti)->GetFieldModifiers(jvmti, k, fields[i], &mods) == JVMTI_ERROR_NONE &&
            (copy = strdup(name)) != NULL) {
            uint8_t type = hb_type_of_descriptor(sig[0]);
            fl_slot *s = &c->slots[i];
            s->type = type;
            s->own = 1;
            if (mods & 0x0008) {                       /* ACC_STATIC */
                s->is_static = 1;
                s->pos = (int32_t)c->n_statics;
                c->statics[c->n_statics++] = (fl_field){ copy, type };
            } else {
                s->pos = (int32_t)c->n_own_pos;
                c->pos[c->n_own_pos++] = (fl_field){ copy, type };
            }
        } else if (name != NULL && sig != NULL && copy == NULL) {
            rc = -1;                                   /* out of memory */
        }                                              /* else: the field is left out (a mismatch) */
        deallocate(jvmti, name);
        deallocate(jvmti, sig);
    }
    deallocate(jvmti, fields);
    return rc;
}

int field_layout_read(JNIEnv *jni, jvmtiEnv *jvmti, const fl_classes *all, jclass k, fl_class *c)
{
    char *sig = NULL;
    if ((*jvmti)->GetClassSignature(jvmti, k, &sig, NULL) != JVMTI_ERROR_NONE)
        return -1;
    c->is_array = sig[0] == '[';
    c->elem_type = c->is_array ? hb_type_of_descriptor(sig[1]) : 0;
    deallocate(jvmti, sig);
    jboolean is_interface = JNI_FALSE;
    (*jvmti)->IsInterface(jvmti, k, &is_interface);
    c->is_interface = is_interface;
    read_supers(jni, jvmti, all, k, c);
    return c->is_array ? 0 : read_fields(jvmti, k, c);
}

/* Fields of every interface C implements, each interface once (JVMTI's
 * index base for C's fields). */
static uint32_t interface_fields(const fl_classes *all, fl_class *c, uint32_t stamp)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->n_ifaces; i++) {
        fl_class *f = all->get(all->ctx, c->ifaces[i]);
        if (f == NULL || f->mark == stamp) continue;
        f->mark = stamp;
        n += f->n_fields + interface_fields(all, f, stamp);
    }
    fl_class *s = all->get(all->ctx, c->super);
    if (s && s != c)
        n += interface_fields(all, s, stamp);
    return n;
}

static int complete(const fl_classes *all, fl_class *c, uint32_t *stamp, int depth)
{
    if (c->laid_out || depth > 512)
        return 0;
    fl_class *s = c->is_interface ? NULL : all->get(all->ctx, c->super);
    if (s && complete(all, s, stamp, depth + 1) != 0)
        return -1;
    uint32_t n_super = s ? s->n_all : 0, pos_super = s ? s->npos : 0;
    fl_slot *slots = calloc((size_t)n_super + c->n_fields + 1, sizeof *slots);
    fl_field *pos = calloc((size_t)pos_super + c->n_own_pos + 1, sizeof *pos);
    if (slots == NULL || pos == NULL) {
        free(slots);
        free(pos);
        return -1;
    }
    /* Dump order: own instance fields first, then the superclass's. */
    for (uint32_t i = 0; i < n_super; i++) {
        slots[i] = s->slots[i];
        slots[i].own = 0;
        if (!slots[i].is_static) slots[i].pos += (int32_t)c->n_own_pos;
    }
    for (uint32_t i = 0; c->slots && i < c->n_fields; i++)
        slots[n_super + i] = c->slots[i];
    for (uint32_t i = 0; i < c->n_own_pos; i++)
        pos[i] = c->pos[i];
    for (uint32_t i = 0; i < pos_super; i++)
        pos[c->n_own_pos + i] = s->pos[i];
    free(c->slots);
    free(c->pos);
    c->slots = slots;
    c->n_all = n_super + c->n_fields;
    c->pos = pos;
    c->npos = pos_super + c->n_own_pos;
    c->value_len = 0;
    for (uint32_t i = 0; i < c->npos; i++)
        c->value_len += (uint32_t)hb_type_size(pos[i].type);
    c->n_if = c->is_interface ? 0 : interface_fields(all, c, ++*stamp);
    c->laid_out = 1;
    return 0;
}

int field_layout_complete(const fl_classes *all, fl_class *c, uint32_t *stamp)
{
    return complete(all, c, stamp, 0);
}

const fl_slot *field_layout_slot(const fl_class *c, jint index, uint8_t type, int is_static)
{
    int64_t i = (int64_t)index - c->n_if;
    if (c->unprepared || i < 0 || i >= c->n_all)
        return NULL;
    const fl_slot *s = &c->slots[i];
    if (s->type != type || s->is_static != is_static || (is_static && !s->own))
        return NULL;
    return s;
}

void field_layout_free(fl_class *c)
{
    /* Own names: the first n_own_pos instance fields and the statics. */
    for (uint32_t i = 0; c->pos && i < c->n_own_pos; i++)
        free((char *)c->pos[i].name);
    for (uint32_t i = 0; c->statics && i < c->n_statics; i++)
        free((char *)c->statics[i].name);
    free(c->ifaces);
    free(c->slots);
    free(c->pos);
    free(c->statics);
    memset(c, 0, sizeof *c);
}

uint64_t field_layout_bits(jvalue v, jvmtiPrimitiveType t)
{
    uint64_t bits = 0;
    uint32_t f;
    switch (t) {
    case JVMTI_PRIMITIVE_TYPE_BOOLEAN: return v.z;
    case JVMTI_PRIMITIVE_TYPE_BYTE: return (uint8_t)v.b;
    case JVMTI_PRIMITIVE_TYPE_CHAR: return v.c;
    case JVMTI_PRIMITIVE_TYPE_SHORT: return (uint16_t)v.s;
    case JVMTI_PRIMITIVE_TYPE_INT: return (uint32_t)v.i;
    case JVMTI_PRIMITIVE_TYPE_LONG: return (uint64_t)v.j;
    case JVMTI_PRIMITIVE_TYPE_FLOAT: memcpy(&f, &v.f, 4); return f;
    case JVMTI_PRIMITIVE_TYPE_DOUBLE: memcpy(&bits, &v.d, 8); return bits;
    }
    return 0;
}
