/*
 * Fuzz target for `hprof listen`'s reader of the agent's frames
 * (frame_reader_feed, src/cli/listen.c), of the live summaries in them and
 * of a series' period frames (period_frame_parse, src/cli/listen_series.c).
 * A stream from the network may be anything: it must be taken or refused
 * with a message, never read or written out of bounds, and the result must
 * not depend on how the bytes were cut into reads. So each input is fed
 * twice, whole and in pieces whose sizes follow from its first byte (whose
 * bit 2 also says whether the stream is a series), and
 * both runs must deliver the same report bytes, summaries, end and error.
 */
#include "fuzz_target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/listen.h"
#include "cli/listen_series.h"
#include "output/net_sink.h"

const char fuzz_target_name[] = "fuzz_net";
const char *const fuzz_target_dictionary[] = {
    "D", "L", "E", "\0\0\0\0", "\0\0\0\1", "\0\0\0\x10", "\0\x10\0\0", "\0\x10\0\1", "\xff\xff\xff\xff",
    "status ", "samples ", "method ", "\n", " 12 ", "HPROF-STREAM 1\n", "P", "seq 1\nstart 1795823100\npid 42\n",
    "seq ", "start ", "pid ", NULL
};

static unsigned long unended, refused, ended;

void fuzz_target_stats(char *buf, size_t size)
{
    snprintf(buf, size, "streams: %lu ended cleanly, %lu cut short, %lu refused", ended, unended, refused);
}

typedef struct outcome {
    unsigned char *data;       /* 'D' payloads, concatenated */
    size_t         ndata, cap;
    unsigned long  live_hash;  /* of every 'L' text, in order */
    unsigned       nlive, nend, nperiod, ngood;
    unsigned long  period_hash;    /* of every 'P' text and what it parsed to */
} outcome;

static FILE *devnull;

static int on_data(void *ctx, const void *bytes, size_t n)
{
    outcome *o = ctx;
    FUZZ_CHECK(n > 0 && o->ndata + n <= o->cap);    /* never more than came in */
    memcpy(o->data + o->ndata, bytes, n);
    o->ndata += n;
    return 0;
}

static void on_live(void *ctx, const char *text)
{
    outcome *o = ctx;
    size_t len = strlen(text);               /* ASan: terminated inside the reader */
    FUZZ_CHECK(len < sizeof ((frame_reader *)0)->live);
    for (size_t i = 0; i < len; i++)
        o->live_hash = o->live_hash * 31 + (unsigned char)text[i];
    o->live_hash = o->live_hash * 31 + 0x100;
    o->nlive++;
    (void)live_summary_samples(text);
    live_summary_render(devnull, text, 1.0);
}

/* A period frame: parsed as the listener does; a bad one stops the stream. */
static int on_period(void *ctx, const char *text)
{
    outcome *o = ctx;
    size_t len = strlen(text);
    FUZZ_CHECK(len <= PERIOD_FRAME_MAX);
    for (size_t i = 0; i < len; i++)
        o->period_hash = o->period_hash * 31 + (unsigned char)text[i];
    o->nperiod++;
    series_period p;
    long pid;
    if (period_frame_parse(text, &p, &pid) != 0)
        return -1;
    FUZZ_CHECK(p.seq >= 1 && pid >= 0);
    o->period_hash = o->period_hash * 31 + p.seq + (unsigned long)pid;
    o->ngood++;
    return 0;
}

static void on_end(void *ctx)
{
    ((outcome *)ctx)->nend++;
}

/* Feeds data[0..n) in pieces of 1..max_piece bytes (0: whole); the result
 * of the last feed. */
static int feed(frame_reader *r, outcome *o, const uint8_t *data, size_t n, uint8_t pattern, int series)
{
    /* A series reads 'P' frames; a single report refuses them. */
    frame_handler h = { o, on_data, on_live, on_end, series ? on_period : NULL };
    memset(r, 0, sizeof *r);
    memset(o, 0, sizeof *o);
    o->cap = n;
    o->data = malloc(n ? n : 1);
    if (o->data == NULL)
        abort();
    size_t at = 0;
    unsigned step = 0;
    int rc = 0;
    while (at < n && rc == 0) {
        size_t piece = pattern ? 1 + (size_t)((pattern * (step++ + 7)) % 61) : n;
        if (piece > n - at)
            piece = n - at;
        /* An exactly sized copy of each piece: a read past it is reported. */
        unsigned char *copy = malloc(piece);
        if (copy == NULL)
            abort();
        memcpy(copy, data + at, piece);
        rc = frame_reader_feed(r, &h, copy, piece);
        free(copy);
        at += piece;
    }
    FUZZ_CHECK(rc == 0 || (r->error[0] != '\0' && memchr(r->error, '\0', sizeof r->error)));
    FUZZ_CHECK(o->nend <= 1 && (o->nend == 1) == (r->ended != 0));
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (devnull == NULL && (devnull = fopen("/dev/null", "w")) == NULL)
        abort();
    static frame_reader whole_reader, cut_reader;
    outcome whole, cut;
    int rc_whole = feed(&whole_reader, &whole, data + 1, size - 1, 0, data[0] & 2);
    int rc_cut = feed(&cut_reader, &cut, data + 1, size - 1, (uint8_t)(data[0] | 1), data[0] & 2);
    FUZZ_CHECK(rc_whole == rc_cut);
    FUZZ_CHECK(strcmp(whole_reader.error, cut_reader.error) == 0);
    /* Stopped at the same byte: an error stops both before what follows. */
    FUZZ_CHECK(whole.ndata == cut.ndata && memcmp(whole.data, cut.data, whole.ndata) == 0);
    FUZZ_CHECK(whole.nlive == cut.nlive && whole.live_hash == cut.live_hash);
    FUZZ_CHECK(whole.nend == cut.nend);
    FUZZ_CHECK(whole.nperiod == cut.nperiod && whole.ngood == cut.ngood && whole.period_hash == cut.period_hash);
    if (rc_whole != 0)
        refused++;
    else if (whole.nend)
        ended++;
    else
        unended++;
    free(whole.data);
    free(cut.data);
    return 0;
}
