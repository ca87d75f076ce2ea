/*
 * frames: verification types, StackMapTable decoding and encoding, and the
 * verifier's linear type pass (JVMS 4.10.1), so that the rewriter can move
 * every existing frame and compute the frames its new branch targets need.
 *
 * Two forms: a frame's locals and stack as JVMS lists (a long is one entry),
 * and the interpreter's slot form (a long is LONG then TOP).
 */
#ifndef HPROF_BCI_FRAMES_H
#define HPROF_BCI_FRAMES_H

#include <stdint.h>

#include "classfile.h"

enum {
    VT_TOP = 0, VT_INTEGER = 1, VT_FLOAT = 2, VT_DOUBLE = 3, VT_LONG = 4, VT_NULL = 5,
    VT_UNINIT_THIS = 6, VT_OBJECT = 7, VT_UNINIT = 8,
    VT_RETURN_ADDRESS = 9,    /* jsr's, never in a StackMapTable */
};

typedef struct vtype {
    uint8_t     tag;
    uint16_t    len;          /* OBJECT: name length */
    uint32_t    off;          /* UNINIT: offset of the `new` in the original code */
    const char *name;         /* OBJECT: internal name or array descriptor */
} vtype;

typedef struct frame {
    uint32_t off;             /* in the original code; the rewriter moves it */
    uint16_t nlocals, nstack; /* list form */
    vtype   *locals, *stack;
} frame;

typedef struct type_state {   /* slot form */
    uint16_t max_locals, max_stack, sp;
    vtype   *locals, *stack;
} type_state;

typedef struct type_context {
    classfile     *cf;
    const uint8_t *code;
    uint32_t       code_len;
    uint16_t       max_locals, max_stack;
    char         **strings;   /* names built for array types, freed with the context */
    uint32_t       n_strings;
    char          *err;
    size_t         err_len;
} type_context;

void type_context_free(type_context *c);

int  state_init(type_state *s, uint16_t max_locals, uint16_t max_stack);
void state_free(type_state *s);
void state_copy(type_state *dst, const type_state *src);

/* The frame at offset 0 implied by the method's descriptor (JVMS 4.10.1.6). */
int state_initial(type_context *c, type_state *s, uint16_t access, const char *name, uint16_t name_len,
                  const char *desc, uint16_t desc_len);

/* Decode a StackMapTable attribute body (after the 6-byte header). */
int  stackmap_decode(type_context *c, const uint8_t *p, uint32_t len, const type_state *initial,
                     frame **frames, uint32_t *n_frames);
void frames_free(frame *frames, uint32_t n);

void state_from_frame(type_state *s, const frame *f);
int  frame_from_state(frame *f, const type_state *s);   /* allocates f's lists */

/* Apply the instruction at `off` to s. Returns -1 (with c->err) on a type
 * or stack error the verifier would also reject. */
int interp_step(type_context *c, type_state *s, uint32_t off);

/* True if the instruction at `off` is the invokespecial <init> that
 * initializes `this` (its receiver is uninitializedThis in s). */
int interp_initializes_this(type_context *c, const type_state *s, uint32_t off);

/* True if any local is uninitializedThis (the verifier's flagThisUninit). */
int state_this_uninit(const type_state *s);

/* Encode frames (sorted, with new offsets) as a StackMapTable body, every
 * frame a full_frame; UNINIT offsets go through map_offset. Returns -1 if a
 * constant-pool entry can't be added. */
int stackmap_encode(writer *w, constant_pool *cp, const frame *frames, uint32_t n,
                    uint32_t (*map_offset)(void *ctx, uint32_t old_off), void *map_ctx);

#endif
