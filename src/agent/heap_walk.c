/* heap_walk: see heap_walk.h. */
#include "heap_walk.h"

#include <stdlib.h>
#include <string.h>

#include "../output/hprof_binary.h"

enum { HEAP_WALK_NONE = 0, HEAP_WALK_INSTANCE, HEAP_WALK_ARRAY, HEAP_WALK_CLASS };

/* ------------------------------------------------ arrays met, not visited */

/* JVMTI gives an array's length where the array is referenced, not where
 * its elements are reported; they are kept from the one to the other. */
static uint32_t hash_id(jlong id)
{
    uint64_t x = (uint64_t)id * UINT64_C(0x9E3779B97F4A7C15);
    return (uint32_t)(x >> 32);
}

static heap_walk_array *array_slot(const heap_walk *w, jlong id)
{
    for (uint32_t j = hash_id(id) & w->arrays_mask;; j = (j + 1) & w->arrays_mask)
        if (w->arrays[j].id == id || w->arrays[j].id == 0)
            return &w->arrays[j];
}

static int grow_arrays(heap_walk *w)
{
    uint32_t mask = w->arrays_mask ? w->arrays_mask * 2 + 1 : 1023;
    heap_walk_array *bigger = calloc((size_t)mask + 1, sizeof *bigger);
    if (bigger == NULL)
        return -1;
    heap_walk_array *old = w->arrays;
    uint32_t old_mask = w->arrays_mask;
    w->arrays = bigger;
    w->arrays_mask = mask;
    for (uint32_t i = 0; old && i <= old_mask; i++)
        if (old[i].id != 0)
            *array_slot(w, old[i].id) = old[i];
    free(old);
    return 0;
}

/* Kept once per array (a sink whose ids outlive the walk meets it again). */
static void note_array(heap_walk *w, jlong id, uint32_t length, jlong size)
{
    if ((w->arrays_used + 1) * 2 > w->arrays_mask && grow_arrays(w) != 0) {
        w->failed = 1;
        return;
    }
    heap_walk_array *a = array_slot(w, id);
    if (a->id == 0) {
        *a = (heap_walk_array){ id, length, size };
        w->arrays_used++;
    }
}

static const heap_walk_array *array_of(const heap_walk *w, jlong id)
{
    if (w->arrays == NULL)
        return NULL;
    const heap_walk_array *a = array_slot(w, id);
    return a->id == id ? a : NULL;
}

/* ------------------------------------------------ the object being assembled */

/* It is complete: hand it over. */
static void finish_current(heap_walk *w)
{
    const heap_walk_sink *s = w->sink;
    if (w->cur_kind == HEAP_WALK_INSTANCE)
        s->instance(s->ctx, w->cur_class, w->cur_class_tag, w->cur, w->values);
    else if (w->cur_kind == HEAP_WALK_ARRAY)
        for (; w->next_element < w->n_elements; w->next_element++)
            s->array_element(s->ctx, w->next_element, 0);
    else if (w->cur_kind == HEAP_WALK_CLASS)
        s->class_done(s->ctx, w->cur_class, w->cur);
    w->cur_kind = HEAP_WALK_NONE;
    w->cur = 0;
}

enum { SWITCHED = 0, MISMATCH = -1, DEFERRED = -2 };

/* Makes the object with this tag (of the class with class_tag) the current
 * one: SWITCHED; DEFERRED if its values go to the sink's defer (its class
 * is unknown); MISMATCH if it cannot be either. */
static int switch_to(heap_walk *w, jlong tag, jlong class_tag)
{
    if (tag == w->cur && w->cur_kind != HEAP_WALK_NONE)
        return SWITCHED;
    finish_current(w);
    if (tag == 0)
        return MISMATCH;
    const heap_walk_sink *s = w->sink;
    if (s->is_class_tag(s->ctx, tag)) {                 /* a class: its statics follow */
        fl_class *c = s->class_of(s->ctx, tag);
        if (c == NULL)
            return s->defer ? DEFERRED : MISMATCH;
        if (c->unprepared && s->defer)                   /* linked since its layout was read? */
            return DEFERRED;
        w->cur = tag;
        w->cur_kind = HEAP_WALK_CLASS;
        w->cur_class = c;
        w->cur_class_tag = tag;
        return SWITCHED;
    }
    if (s->defer && class_tag != 0 && class_tag == s->defer_class)
        return DEFERRED;                                 /* a class the sink does not know */
    /* Class tag 0: a class whose Class object had no tag when the walk met
     * the object; the object's CLASS reference (first of its references)
     * names that Class object, after which the tag is the one given to it. */
    fl_class *c = s->class_of(s->ctx, class_tag);
    if (c == NULL)
        return s->defer ? DEFERRED : MISMATCH;
    /* An object of a class read before it was linked (no layout then): its
     * class has been linked since, so the sink can read its layout now. */
    if (c->unprepared && !c->is_array && s->defer)
        return DEFERRED;
    w->cur = tag;
    w->cur_class = c;
    w->cur_class_tag = class_tag;
    if (c->is_array && c->elem_type != HB_OBJECT)        /* primitive array: whole, from on_array_values */
        return 0;
    if (c->is_array) {                                   /* array of references: its elements follow */
        const heap_walk_array *a = array_of(w, tag);
        if (a == NULL)
            return MISMATCH;
        w->cur_kind = HEAP_WALK_ARRAY;
        w->next_element = 0;
        w->n_elements = a->length;
        s->array_begin(s->ctx, c, class_tag, tag, a->length, a->size);
        return 0;
    }
    if (c->npos > w->max_positions)
        return MISMATCH;
    w->cur_kind = HEAP_WALK_INSTANCE;
    memset(w->values, 0, (size_t)c->npos * sizeof *w->values);
    return SWITCHED;
}

static void defer(heap_walk *w, jlong id, jlong class_tag, uint8_t kind, jint index, uint8_t type, uint64_t bits)
{
    heap_walk_deferred d = { .id = id, .class_tag = class_tag, .bits = bits, .index = index,
                             .kind = kind, .type = type };
    w->sink->defer(w->sink->ctx, &d);
}

static void array_element(heap_walk *w, uint32_t index, jlong id)
{
    if (index >= w->n_elements || index < w->next_element) {
        w->mismatches++;
        return;
    }
    const heap_walk_sink *s = w->sink;
    for (; w->next_element < index; w->next_element++)
        s->array_element(s->ctx, w->next_element, 0);
    s->array_element(s->ctx, index, id);
    w->next_element = index + 1;
}

/* A field's value (an id, or a primitive's bits) at a JVMTI field index. */
static void field_value(heap_walk *w, int is_static, jint index, uint8_t type, uint64_t bits)
{
    fl_class *c = w->cur_class;
    if (c->unprepared)              /* no layout: its values are left out, knowingly */
        return;
    const fl_slot *slot = field_layout_slot(c, index, type, is_static);
    if (slot == NULL) {
        w->mismatches++;
        return;
    }
    if (is_static) {
        if (w->cur_kind == HEAP_WALK_CLASS && (uint32_t)slot->pos < c->n_statics)
            w->sink->static_value(w->sink->ctx, c, (uint32_t)slot->pos, bits);
    } else if (w->cur_kind == HEAP_WALK_INSTANCE && (uint32_t)slot->pos < c->npos) {
        w->values[slot->pos] = bits;
    }
}

/* ------------------------------------------------ JVMTI callbacks */

static int must_stop(const heap_walk *w)
{
    return w->failed || w->stopped || (w->sink->failed && w->sink->failed(w->sink->ctx));
}

static jint JNICALL on_reference(jvmtiHeapReferenceKind kind, const jvmtiHeapReferenceInfo *info,
                                 jlong class_tag, jlong referrer_class_tag, jlong size, jlong *tag_ptr,
                                 jlong *referrer_tag_ptr, jint length, void *user_data)
{
    heap_walk *w = user_data;
    const heap_walk_sink *s = w->sink;
    if (must_stop(w))
        return JVMTI_VISIT_ABORT;
    int first = 0;
    jlong id = s->id_of(s->ctx, tag_ptr, &first);
    if (id == 0) {
        w->stopped = 1;
        return JVMTI_VISIT_ABORT;
    }
    if (first) {
        fl_class *c = s->class_of(s->ctx, class_tag);
        if (c && c->is_array && c->elem_type == HB_OBJECT && length >= 0)
            note_array(w, id, (uint32_t)length, size);
        else if (c == NULL && s->defer)                 /* an object of a new class, maybe an array */
            defer(w, id, class_tag, length >= 0 ? HEAP_WALK_DEFER_ARRAY : HEAP_WALK_DEFER_SIZE, length,
                  HB_OBJECT, (uint64_t)size);
        if (s->met)
            s->met(s->ctx, id, class_tag, size, length);
    }
    if (referrer_tag_ptr == NULL) {
        s->root(s->ctx, kind, info, id);
        return s->follow;
    }
    int to = switch_to(w, *referrer_tag_ptr, referrer_class_tag);
    if (to == DEFERRED) {
        uint8_t what = kind == JVMTI_HEAP_REFERENCE_FIELD          ? HEAP_WALK_DEFER_FIELD
                     : kind == JVMTI_HEAP_REFERENCE_STATIC_FIELD   ? HEAP_WALK_DEFER_STATIC
                     : kind == JVMTI_HEAP_REFERENCE_ARRAY_ELEMENT  ? HEAP_WALK_DEFER_ELEMENT
                                                                   : HEAP_WALK_DEFER_OBJECT;
        jint index = what == HEAP_WALK_DEFER_ELEMENT ? info->array.index
                   : what == HEAP_WALK_DEFER_OBJECT  ? (jint)kind : info->field.index;
        defer(w, *referrer_tag_ptr, referrer_class_tag, what, index, HB_OBJECT, (uint64_t)id);
        return s->follow;
    }
    if (to != SWITCHED) {
        w->mismatches++;
        return s->follow;
    }
    switch (kind) {
    case JVMTI_HEAP_REFERENCE_FIELD:
        field_value(w, 0, info->field.index, HB_OBJECT, (uint64_t)id);
        break;
    case JVMTI_HEAP_REFERENCE_STATIC_FIELD:
        field_value(w, 1, info->field.index, HB_OBJECT, (uint64_t)id);
        break;
    case JVMTI_HEAP_REFERENCE_ARRAY_ELEMENT:
        if (w->cur_kind == HEAP_WALK_ARRAY)
            array_element(w, (uint32_t)info->array.index, id);
        break;
    case JVMTI_HEAP_REFERENCE_CONSTANT_POOL:
        if (w->cur_kind == HEAP_WALK_CLASS)
            s->class_reference(s->ctx, w->cur_class, kind, info->constant_pool.index, id);
        break;
    case JVMTI_HEAP_REFERENCE_CLASS_LOADER:
    case JVMTI_HEAP_REFERENCE_SIGNERS:
    case JVMTI_HEAP_REFERENCE_PROTECTION_DOMAIN:
        if (w->cur_kind == HEAP_WALK_CLASS)
            s->class_reference(s->ctx, w->cur_class, kind, 0, id);
        break;
    default:                 /* an object's class, a superclass, an interface */
        break;
    }
    return s->follow;
}

static jint JNICALL on_primitive_field(jvmtiHeapReferenceKind kind, const jvmtiHeapReferenceInfo *info,
                                       jlong object_class_tag, jlong *object_tag_ptr, jvalue value,
                                       jvmtiPrimitiveType value_type, void *user_data)
{
    heap_walk *w = user_data;
    const heap_walk_sink *s = w->sink;
    if (must_stop(w))
        return JVMTI_VISIT_ABORT;
    int first = 0;
    jlong id = s->id_of(s->ctx, object_tag_ptr, &first);
    int to = switch_to(w, id, object_class_tag);
    int is_static = kind == JVMTI_HEAP_REFERENCE_STATIC_FIELD;
    /* JVMTI's primitive type codes are the signature letters. */
    uint8_t type = hb_type_of_descriptor((char)value_type);
    uint64_t bits = field_layout_bits(value, value_type);
    if (to == DEFERRED)
        defer(w, id, object_class_tag, is_static ? HEAP_WALK_DEFER_STATIC : HEAP_WALK_DEFER_FIELD,
              info->field.index, type, bits);
    else if (to != SWITCHED)
        w->mismatches++;
    else
        field_value(w, is_static, info->field.index, type, bits);
    return 0;
}

static jint JNICALL on_array_values(jlong class_tag, jlong size, jlong *tag_ptr, jint element_count,
                                    jvmtiPrimitiveType element_type, const void *elements, void *user_data)
{
    heap_walk *w = user_data;
    const heap_walk_sink *s = w->sink;
    if (must_stop(w))
        return JVMTI_VISIT_ABORT;
    finish_current(w);
    int first = 0;
    jlong id = s->id_of(s->ctx, tag_ptr, &first);
    if (id == 0) {
        w->stopped = 1;
        return JVMTI_VISIT_ABORT;
    }
    s->primitive_array(s->ctx, class_tag, id, size, element_count, hb_type_of_descriptor((char)element_type),
                       elements);
    return 0;
}

/* ------------------------------------------------ deferred values */

int heap_walk_keep_deferred(heap_walk_deferrals *l, const heap_walk_deferred *d)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        heap_walk_deferred *more = cap <= HEAP_WALK_MAX_DEFERRED ? realloc(l->v, cap * sizeof *more) : NULL;
        if (more == NULL) {
            l->dropped++;
            return -1;
        }
        l->v = more;
        l->cap = cap;
    }
    l->v[l->n++] = *d;
    return 0;
}

/* (id, arrival): the entries of one object together, in the walk's order. */
static int by_object(const void *a, const void *b)
{
    const heap_walk_deferred *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void heap_walk_sort_deferred(heap_walk_deferrals *l)
{
    for (size_t i = 0; i < l->n; i++)
        l->v[i].seq = (uint32_t)i;
    if (l->n > 1)
        qsort(l->v, l->n, sizeof *l->v, by_object);
}

size_t heap_walk_object_end(const heap_walk_deferrals *l, size_t i)
{
    size_t j = i + 1;
    while (j < l->n && l->v[j].id == l->v[i].id)
        j++;
    return j;
}

jlong heap_walk_deferred_class(const heap_walk_deferred *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (d[i].class_tag != 0)
            return d[i].class_tag;
        if (d[i].kind == HEAP_WALK_DEFER_OBJECT && d[i].index == JVMTI_HEAP_REFERENCE_CLASS)
            return (jlong)d[i].bits;
    }
    return 0;
}

void heap_walk_free_deferred(heap_walk_deferrals *l)
{
    free(l->v);
    *l = (heap_walk_deferrals){ 0 };
}

/* ------------------------------------------------ the walk */

int heap_walk_init(heap_walk *w, const heap_walk_sink *sink, uint32_t max_positions)
{
    memset(w, 0, sizeof *w);
    w->sink = sink;
    w->max_positions = max_positions;
    w->values = calloc(max_positions ? max_positions : 1, sizeof *w->values);
    return w->values ? 0 : -1;
}

jvmtiError heap_walk_run(heap_walk *w, jvmtiEnv *jvmti, jobject initial)
{
    jvmtiHeapCallbacks callbacks;
    memset(&callbacks, 0, sizeof callbacks);
    callbacks.heap_reference_callback = on_reference;
    callbacks.primitive_field_callback = on_primitive_field;
    callbacks.array_primitive_value_callback = on_array_values;
    jvmtiError err = (*jvmti)->FollowReferences(jvmti, 0, NULL, initial, &callbacks, w);
    finish_current(w);
    return err;
}

void heap_walk_free(heap_walk *w)
{
    free(w->values);
    free(w->arrays);
    w->values = NULL;
    w->arrays = NULL;
}
