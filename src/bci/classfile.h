/*
 * classfile: the parts of a class file the rewriter needs, parsed in place.
 * Everything it doesn't change (interfaces, fields, class attributes, other
 * method attributes) is kept as raw byte ranges of the input and copied out.
 * The constant pool can grow: new entries are appended after the old ones,
 * so every existing index stays valid.
 */
#ifndef HPROF_BCI_CLASSFILE_H
#define HPROF_BCI_CLASSFILE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

enum {
    CP_UTF8 = 1, CP_INTEGER = 3, CP_FLOAT = 4, CP_LONG = 5, CP_DOUBLE = 6, CP_CLASS = 7,
    CP_STRING = 8, CP_FIELDREF = 9, CP_METHODREF = 10, CP_INTERFACE_METHODREF = 11,
    CP_NAME_AND_TYPE = 12, CP_METHOD_HANDLE = 15, CP_METHOD_TYPE = 16, CP_DYNAMIC = 17,
    CP_INVOKE_DYNAMIC = 18, CP_MODULE = 19, CP_PACKAGE = 20,
};

/* Method access flags the rewriter reads. */
enum { ACC_STATIC = 0x0008 };

typedef struct cp_entry {
    uint8_t        tag;     /* 0 for the unusable slot after a long/double */
    uint16_t       len;     /* UTF8: byte length */
    const uint8_t *data;    /* the bytes after the tag (owned copy for added UTF8) */
} cp_entry;

typedef struct constant_pool {
    uint32_t  count;        /* like constant_pool_count: valid indexes are 1..count-1 */
    uint32_t  cap;
    cp_entry *e;
    uint32_t  original_count;
    const uint8_t *original; size_t original_len;   /* the input's pool, copied as is */
    writer    added;        /* appended entries, tag and body */
    char    **owned;        /* copies that added entries point into */
    uint32_t  n_owned;
} constant_pool;

typedef struct method_info {
    uint16_t       access, name_index, descriptor_index;
    const uint8_t *start, *end;         /* the whole method_info in the input */
    const uint8_t *code_attr;           /* the Code attribute (from its name index), or NULL */
    uint32_t       code_attr_len;       /* including the 6-byte header */
} method_info;

typedef struct classfile {
    uint16_t       minor, major;
    constant_pool  cp;
    uint16_t       access, this_class, super_class;
    const char    *this_name; uint16_t this_name_len;
    const uint8_t *middle, *middle_end; /* access flags .. end of fields, raw */
    uint16_t       methods_count;
    method_info   *methods;
    const uint8_t *tail, *tail_end;     /* class attributes, raw */
    uint16_t       tracker_refs[8];     /* the rewriter's Methodref indexes, made once per class */
} classfile;

/* Parse; on failure returns -1 with a message in err. */
int  classfile_parse(classfile *cf, const uint8_t *in, size_t len, char *err, size_t err_len);
void classfile_free(classfile *cf);

/* Constant-pool lookups; NULL / 0 if the index is out of range or of the wrong kind. */
const char *cp_utf8(const constant_pool *cp, uint32_t index, uint16_t *len);
const char *cp_class_name(const constant_pool *cp, uint32_t index, uint16_t *len);
int cp_tag(const constant_pool *cp, uint32_t index);
/* A Fieldref/Methodref/InterfaceMethodref/NameAndType/(Invoke)Dynamic's name and descriptor. */
int cp_member(const constant_pool *cp, uint32_t index, const char **name, uint16_t *name_len,
              const char **desc, uint16_t *desc_len);

/* Find or append entries; return the index, or 0 if the pool is full (65535). */
uint16_t cp_utf8_index(constant_pool *cp, const char *s, uint16_t len);
uint16_t cp_class_index(constant_pool *cp, const char *name, uint16_t len);
uint16_t cp_methodref_index(constant_pool *cp, const char *cls, const char *name, const char *desc);
/* Appends an Integer without looking for an equal one (method ids are unique). */
uint16_t cp_integer_append(constant_pool *cp, int32_t value);

#endif
