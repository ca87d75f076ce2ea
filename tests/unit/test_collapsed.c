/* Unit tests: collapsed stacks from a profile (src/profile/collapsed.c). */
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>

#include "profile/collapsed.h"

/* The writer's output for value `index` of p, malloc'ed; NULL when it failed. */
static char *collapsed_text(const profile *p, uint32_t index)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    int rc = collapsed_write_profile(p, index, f);
    fclose(f);
    if (rc != 0) {
        free(text);
        return NULL;
    }
    return text;
}

TEST(collapsed_writes_root_first_and_merges_threads)
{
    profile_value_type types[2] = { { "samples", "count" }, { "cpu", "nanoseconds" } };
    profile *p = profile_new("CPU samples", types, 2);
    uint32_t leaf = profile_frame_id(p, "java.util.HashMap", "get", "()V", "HashMap.java", 10);
    uint32_t leaf_line2 = profile_frame_id(p, "java.util.HashMap", "get", "()V", "HashMap.java", 11);
    uint32_t mid = profile_frame_id(p, "Demo", "lambda$0", "", "", 5);
    uint32_t root = profile_frame_id(p, "Demo", "main", "", "", 1);
    uint32_t init = profile_frame_id(p, "Demo", "<init>", "", "", 2);
    uint32_t a[3] = { leaf, mid, root }, b[3] = { leaf_line2, mid, root }, c[2] = { init, root };
    profile_add(p, a, 3, "main", (const int64_t[]){ 2, 20 });
    profile_add(p, a, 3, "worker", (const int64_t[]){ 3, 30 });   /* another thread: same line */
    profile_add(p, b, 3, "main", (const int64_t[]){ 1, 10 });     /* another line number: same name */
    profile_add(p, c, 2, "main", (const int64_t[]){ 4, 40 });
    profile_add(p, c, 1, "main", (const int64_t[]){ 0, 0 });      /* zero: left out */
    profile_add(p, c, 0, "", (const int64_t[]){ 1, 7 });          /* no frames */
    char *text = collapsed_text(p, 0);
    CHECK_STR(text, "Demo.main;Demo.lambda$0;java.util.HashMap.get 6\n"
                    "Demo.main;Demo.<init> 4\n"
                    COLLAPSED_EMPTY_STACK " 1\n");
    free(text);
    text = collapsed_text(p, 1);
    CHECK(text != NULL && strstr(text, "Demo.main;Demo.<init> 40\n") != NULL);
    free(text);
    CHECK(collapsed_text(p, 2) == NULL);                             /* no such value */
    profile_free(p);
}

TEST(collapsed_keeps_names_on_one_field)
{
    profile_value_type type = { "samples", "count" };
    profile *p = profile_new("x", &type, 1);
    uint32_t odd = profile_frame_id(p, "A;B", "m\nn", "", "", 1);
    int64_t one = 1;
    profile_add(p, &odd, 1, NULL, &one);
    char *text = collapsed_text(p, 0);
    CHECK_STR(text, "A_B.m_n 1\n");
    free(text);
    profile_free(p);
}

TEST(collapsed_marks_how_java_frames_ran)
{
    profile_value_type type = { "samples", "count" };
    profile *p = profile_new("x", &type, 1);
    uint32_t hot_inlined = profile_frame_id_run(p, "A", "hot", "", "", 3, PROFILE_RUN_INLINED);
    uint32_t hot_interp = profile_frame_id_run(p, "A", "hot", "", "", 3, PROFILE_RUN_INTERPRETED);
    uint32_t loop = profile_frame_id_run(p, "A", "loop", "", "", 9, PROFILE_RUN_COMPILED);
    uint32_t main_frame = profile_frame_id(p, "A", "main", "", "", 1);
    CHECK(hot_inlined != hot_interp);               /* the run is part of a frame */
    CHECK(profile_frame_id_run(p, "A", "main", "", "", 1, PROFILE_RUN_UNKNOWN) == main_frame);
    uint32_t a[3] = { hot_inlined, loop, main_frame }, b[2] = { hot_interp, main_frame };
    int64_t one = 1;
    profile_add(p, a, 3, NULL, &one);
    profile_add(p, b, 2, NULL, &one);
    char *text = collapsed_text(p, 0);
    CHECK_STR(text, "A.main;A.loop_[j];A.hot_[i] 1\n"
                    "A.main;A.hot_[0] 1\n");
    free(text);
    profile_free(p);
}
