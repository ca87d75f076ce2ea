/*
 * Fuzz target for what the attach path parses, on both sides:
 *   the agent: a load's options string, split into command word, reply= and
 *     options (command_parse), then options_parse and command_check, as
 *     agent.c does for every attach and jcmd JVMTI.agent_load;
 *   build/hprof (src/cli/attach.c): the JVM's answer to `load`, the JVM's
 *     /proc/<pid>/status and /proc/<pid>/maps, and the request it builds.
 * The first input byte picks the parser (mod 5), the rest is its input.
 * Every input is accepted or refused with a message, never read or written
 * out of bounds, and the results keep their documented shape.
 */
#include "fuzz_target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/attach.h"
#include "options/options.h"

const char fuzz_target_name[] = "fuzz_attach";
const char *const fuzz_target_dictionary[] = {
    "start", "stop", "dump", "reset", "status", ",", "reply=/", "reply=", "file=", "cpu=samples",
    "heap=sites", "monitor=y", "\n", "0\n", "-1\n", "return code: ", "return code: -1",
    "Tgid:\t", "Uid:\t", "Gid:\t", "NSpid:\t", "Name:\t", "1000\t1000\t1000\t1000", "4294967295",
    "/libjvm.so", "/tmp/hsperfdata_u/", " (deleted)", "7fff-8000 rw-s 00000000 08:01 123 ", "\t",
    NULL
};

static unsigned long counts[5][2];      /* per parser: accepted, refused */

void fuzz_target_stats(char *buf, size_t size)
{
    snprintf(buf, size, "accepted/refused: command %lu/%lu, load answer %lu/%lu, status %lu/%lu, "
             "maps %lu/%lu, request %lu/%lu", counts[0][0], counts[0][1], counts[1][0], counts[1][1],
             counts[2][0], counts[2][1], counts[3][0], counts[3][1], counts[4][0], counts[4][1]);
}

static int terminated(const char *s, size_t size)
{
    return memchr(s, '\0', size) != NULL;
}

/* agent.c's order: split, parse what remains, check it fits the command. */
static int agent_load_options(const char *text)
{
    static command_request req;
    static hprof_options opt;
    char err[512];
    if (command_parse(text, &req, err, sizeof err) != 0) {
        FUZZ_CHECK(terminated(err, sizeof err) && err[0] != '\0');
        return -1;
    }
    FUZZ_CHECK(terminated(req.reply, sizeof req.reply) && terminated(req.options, sizeof req.options));
    FUZZ_CHECK(req.reply[0] == '\0' || req.reply[0] == '/');
    FUZZ_CHECK(req.command >= COMMAND_START && req.command <= COMMAND_STATUS);
    FUZZ_CHECK(command_name(req.command) != NULL);
    FUZZ_CHECK(strstr(req.options, "reply=/") == NULL || strstr(text, "reply=/") != NULL);
    if (options_parse(req.options, &opt, err, sizeof err) != 0 ||
        command_check(&req, &opt, err, sizeof err) != 0) {
        FUZZ_CHECK(terminated(err, sizeof err) && err[0] != '\0');
        return -1;
    }
    return 0;
}

static int load_answer_of(const char *bytes, size_t n)
{
    load_answer a;
    attach_parse_load_answer(bytes, n, &a);
    FUZZ_CHECK(a.outcome == LOAD_AGENT_RETURNED || a.outcome == LOAD_NOT_RUN ||
               a.outcome == LOAD_NO_ANSWER);
    FUZZ_CHECK(terminated(a.message, sizeof a.message));
    /* One line: the message goes into a single line of build/hprof's output. */
    FUZZ_CHECK(strchr(a.message, '\n') == NULL && strchr(a.message, '\r') == NULL);
    FUZZ_CHECK(a.outcome == LOAD_AGENT_RETURNED || a.message[0] != '\0');
    return a.outcome == LOAD_AGENT_RETURNED ? 0 : -1;
}

static int proc_status(const char *text)
{
    static attach_target t;
    memset(&t, 0x5a, sizeof t);
    if (attach_parse_proc_status(text, &t) != 0)
        return -1;
    FUZZ_CHECK(t.tgid > 0 && t.nspid > 0);
    FUZZ_CHECK(terminated(t.name, sizeof t.name) && strchr(t.name, '\n') == NULL);
    return 0;
}

static int proc_maps(const char *text, pid_t nspid)
{
    static attach_target t;
    memset(&t, 0, sizeof t);
    t.nspid = nspid;
    attach_scan_maps(text, &t);
    FUZZ_CHECK(terminated(t.perfdata_path, sizeof t.perfdata_path));
    FUZZ_CHECK(t.perfdata_path[0] == '\0' || strstr(t.perfdata_path, "hsperfdata_") != NULL);
    FUZZ_CHECK(terminated(t.jvmpi_path, sizeof t.jvmpi_path));
    FUZZ_CHECK(t.jvmpi_path[0] == '\0' || t.jvmpi_path[0] == '/');
    return t.has_libjvm ? 0 : -1;
}

/* The input's NUL-separated parts as op and arguments; a buffer sized by
 * the input's second byte, so short buffers are tried too. */
static int request(const char *bytes, size_t n, size_t buf_size)
{
    const char *parts[1 + ATTACH_ARG_COUNT] = { "", NULL, NULL, NULL };
    size_t at = 0;
    for (int i = 0; i < 1 + ATTACH_ARG_COUNT && at <= n; i++) {
        parts[i] = bytes + at;
        at += strlen(bytes + at) + 1;
    }
    char *buf = malloc(buf_size ? buf_size : 1);
    char err[256];
    if (buf == NULL)
        abort();
    long len = attach_build_request(parts[0], parts + 1, buf, buf_size, err, sizeof err);
    if (len < 0) {
        FUZZ_CHECK(terminated(err, sizeof err) && err[0] != '\0');
    } else {
        /* "1\0op\0a1\0a2\0a3\0": five NULs, the last at the end. */
        FUZZ_CHECK((size_t)len <= buf_size && buf[len - 1] == '\0' && buf[0] == '1');
        size_t nuls = 0;
        for (long i = 0; i < len; i++)
            nuls += buf[i] == '\0';
        FUZZ_CHECK(nuls == 2 + ATTACH_ARG_COUNT);
    }
    free(buf);
    return len < 0 ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned which = data[0] % 5;
    size_t n = size - 1;
    /* Exactly sized, NUL-terminated copies: the parsers take C strings
     * (proc files, the options string), except the load answer (bytes). */
    char *text = malloc(n + 1);
    if (text == NULL)
        abort();
    memcpy(text, data + 1, n);
    text[n] = '\0';
    int rc;
    switch (which) {
    case 0:  rc = agent_load_options(text); break;
    case 1: {
        char *bytes = malloc(n ? n : 1);
        if (bytes == NULL)
            abort();
        memcpy(bytes, data + 1, n);
        rc = load_answer_of(bytes, n);
        free(bytes);
        break;
    }
    case 2:  rc = proc_status(text); break;
    case 3:  rc = proc_maps(text, 4242); break;     /* the seeds map .../hsperfdata_u/4242 */
    default: rc = request(text, n, n ? (size_t)data[1] * 16 : 0); break;
    }
    counts[which][rc == 0 ? 0 : 1]++;
    free(text);
    return 0;
}
