/* Unit tests: the profile model (src/profile). */
#include "unit.h"

#include <stdint.h>

#include "profile/profile.h"

static profile *cpu_profile(void)
{
    profile_value_type types[2] = { { "samples", "count" }, { "cpu", "nanoseconds" } };
    return profile_new("CPU samples", types, 2);
}

TEST(profile_interns_frames)
{
    profile *p = cpu_profile();
    CHECK(p != NULL);
    uint32_t a = profile_frame_id(p, "Demo", "run", "()V", "Demo.java", 10);
    uint32_t b = profile_frame_id(p, "Demo", "run", "()V", "Demo.java", 11);
    uint32_t a2 = profile_frame_id(p, "Demo", "run", "()V", "Demo.java", 10);
    uint32_t c = profile_frame_id(p, "Demo", "run", NULL, NULL, PROFILE_LINE_UNKNOWN);
    CHECK(a == 1 && b == 2 && a2 == a && c == 3);
    CHECK(profile_frame_count(p) == 3);
    const profile_frame *f = profile_frame_get(p, c);
    CHECK(f != NULL && f->signature[0] == 0 && f->file[0] == 0 && f->line == PROFILE_LINE_UNKNOWN);
    CHECK(profile_frame_get(p, 0) == NULL && profile_frame_get(p, 4) == NULL);
    char name[64];
    CHECK(profile_frame_name(profile_frame_get(p, a), name, sizeof name) == 8);
    CHECK_STR(name, "Demo.run");
    profile_free(p);
}

TEST(profile_merges_samples_of_one_stack_and_thread)
{
    profile *p = cpu_profile();
    uint32_t leaf = profile_frame_id(p, "Demo", "leaf", "", "", 1);
    uint32_t root = profile_frame_id(p, "Demo", "main", "", "", 2);
    uint32_t stack[2] = { leaf, root };
    int64_t one[2] = { 1, 10000000 };
    CHECK(profile_add(p, stack, 2, "main", one) == 0);
    CHECK(profile_add(p, stack, 2, "main", one) == 0);
    CHECK(profile_add(p, stack, 2, "worker", one) == 0);   /* another thread: another sample */
    CHECK(profile_add(p, stack, 1, "main", one) == 0);     /* another stack */
    CHECK(profile_add(p, stack, 0, NULL, one) == 0);       /* empty stack is a stack */
    uint32_t bad[1] = { 99 };
    CHECK(profile_add(p, bad, 1, NULL, one) == -1);
    CHECK(profile_sample_count(p) == 4);
    profile_sample s;
    CHECK(profile_sample_get(p, 0, &s) == 0);
    CHECK(s.depth == 2 && s.frames[0] == leaf && s.frames[1] == root);
    CHECK_STR(s.thread, "main");
    CHECK(s.values[0] == 2 && s.values[1] == 20000000);
    CHECK(profile_sample_get(p, 3, &s) == 0 && s.depth == 0 && s.thread[0] == 0);
    CHECK(profile_sample_get(p, 4, &s) == -1);
    CHECK(profile_total(p, 0) == 5 && profile_total(p, 1) == 50000000);
    profile_free(p);
}

TEST(profile_keeps_many_stacks_and_metadata)
{
    profile_value_type types[1] = { { "alloc_space", "bytes" } };
    CHECK(profile_new("x", types, 0) == NULL);
    CHECK(profile_new("x", types, PROFILE_MAX_VALUES + 1) == NULL);
    profile *p = profile_new("Allocation sites", types, 1);
    profile_set_period(p, (profile_value_type){ "space", "bytes" }, 512 * 1024);
    profile_set_time(p, 1000, 2000);
    profile_set_default_value(p, 5);                       /* out of range: ignored */
    CHECK_STR(profile_title(p), "Allocation sites");
    CHECK_STR(profile_value(p, 0).unit, "bytes");
    CHECK_STR(profile_period_type(p).type, "space");
    CHECK(profile_period(p) == 512 * 1024 && profile_default_value(p) == 0);
    CHECK(profile_start_nanos(p) == 1000 && profile_duration_nanos(p) == 2000);
    /* 100,000 distinct stacks over 1,000 frames, added twice: merged. */
    uint32_t ids[1000];
    char method[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(method, sizeof method, "m%d", i);
        ids[i] = profile_frame_id(p, "Big", method, "", "Big.java", i);
    }
    for (int round = 0; round < 2; round++)
        for (uint32_t i = 0; i < 100000; i++) {
            uint32_t stack[3] = { ids[i % 1000], ids[(i / 1000) % 1000], ids[999 - i % 7] };
            int64_t v = 3;
            CHECK(profile_add(p, stack, 3, NULL, &v) == 0);
        }
    CHECK(profile_sample_count(p) <= 100000 && profile_sample_count(p) > 90000);
    CHECK(profile_total(p, 0) == 600000);
    profile_free(p);
}
