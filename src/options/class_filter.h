/*
 * class_filter: which classes cpu=times times (options include= and
 * exclude=). A filter is a ':'-separated list of Java class names, each
 * either exact ("com.example.Parser") or a prefix ending in '*'
 * ("java.*", "com.example.Parser*" for the class and its nested classes,
 * "*" for every class). Matched against the JVM's internal names
 * ("java/lang/String"), so the patterns are kept in that form. Pure C.
 */
#ifndef HPROF_CLASS_FILTER_H
#define HPROF_CLASS_FILTER_H

#include <stddef.h>
#include <stdint.h>

#define CLASS_FILTER_TEXT_MAX 1024   /* the option's value, at most */
#define CLASS_FILTER_MAX      64     /* patterns in one filter */

typedef struct class_filter {
    int      n;                               /* patterns; 0: the option was not given */
    uint16_t start[CLASS_FILTER_MAX];         /* offset of each in names */
    uint16_t len[CLASS_FILTER_MAX];
    uint8_t  prefix[CLASS_FILTER_MAX];        /* ended in '*': matches names that begin so */
    char     names[CLASS_FILTER_TEXT_MAX];    /* the patterns, internal form, '*' dropped */
} class_filter;

/* Parse an option's value (option: its name, for messages). 0, or -1 with a
 * message in err that names the option and the pattern that is wrong. */
int class_filter_parse(const char *option, const char *text, class_filter *out, char *err, size_t errlen);

/* Does a class of this internal name (len bytes) match one of f's patterns? */
int class_filter_matches(const class_filter *f, const char *name, size_t len);
/* The first pattern of f it matches (its index), or -1. */
int class_filter_which(const class_filter *f, const char *name, size_t len);
/* Pattern i as the user wrote it (Java form, '*' restored) into buf. */
void class_filter_pattern(const class_filter *f, int i, char *buf, size_t size);

/* Whether cpu=times times a class: it matches include (or include is
 * empty) and does not match exclude. Either may be NULL (not given).
 * include_match / exclude_match (may be NULL) get the index of the pattern
 * of each that the name matched, or -1. */
int class_filter_times(const class_filter *include, const class_filter *exclude, const char *name, size_t len,
                       int *include_match, int *exclude_match);

#endif
