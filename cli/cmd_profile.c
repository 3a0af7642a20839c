/* cmd_profile.c - `zbsched profile --from torch-trace|megatron|zbexec
 * FILE... -o OUT`: a profile measured in a real run (one trace per rank,
 * or directories of them), with each median's spread and sample count in
 * its "measured" object (docs/profiles.md). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli.h"
#include "commands.h"
#include "zbsched/io.h"
#include "zbsched/json.h"
#include "zbsched/profile_import.h"
#include "zbsched/xalloc.h"

enum source { SRC_TORCH, SRC_MEGATRON, SRC_ZBEXEC };

struct files {
    char **path;
    int n, cap;
};

static void add_path(struct files *f, const char *path)
{
    zb_xgrow((void **)&f->path, &f->cap, f->n + 1, sizeof(*f->path));
    f->path[f->n++] = zb_xstrdup(path);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory stands for its regular files (not hidden), by name. */
static int expand(const char *path, struct files *f)
{
    struct stat st;
    struct dirent *e;
    DIR *d;
    int first = f->n;

    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        add_path(f, path);
        return CLI_OK;
    }
    if (!(d = opendir(path))) {
        cli_error("cannot open directory '%s'", path);
        return CLI_FAIL;
    }
    while ((e = readdir(d))) {
        char *p;
        if (e->d_name[0] == '.')
            continue;
        p = zb_xmalloc(strlen(path) + strlen(e->d_name) + 2);
        sprintf(p, "%s/%s", path, e->d_name);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
            add_path(f, p);
        free(p);
    }
    closedir(d);
    if (f->n == first) {
        cli_error("'%s': the directory holds no file", path);
        return CLI_FAIL;
    }
    qsort(f->path + first, (size_t)(f->n - first), sizeof(char *), by_name);
    return CLI_OK;
}

static int read_file(const char *path, char **text)
{
    struct zb_error err = { 0 };
    size_t n = strlen(path);

    if (n > 3 && !strcmp(path + n - 3, ".gz")) {
        cli_error("'%s': compressed traces are not read: gunzip it first",
                  path);
        return CLI_FAIL;
    }
    if (zb_io_slurp_limit(path, ZB_IO_MAX_TRACE, text, &err) < 0)
        return cli_fail_file(path, &err);
    return CLI_OK;
}

static int number_opt(const struct cli_args *a, const char *name, int *out)
{
    double v;
    int rc = cli_number(a, name, 0, &v);

    if (rc != CLI_OK)
        return rc;
    if (v != (int)v || v < 0 || v > 1e6) {
        cli_error("profile: --%s must be a whole number >= 1", name);
        return CLI_USAGE;
    }
    *out = (int)v;
    return CLI_OK;
}

static int options(const struct cli_args *a, enum source *src,
                   struct zb_measure_opts *o)
{
    const char *from = cli_get(a, "from"), *pl = cli_get(a, "placement");
    int rc;

    memset(o, 0, sizeof(*o));
    if (!from) {
        cli_error("profile: --from torch-trace|megatron|zbexec is required");
        return CLI_USAGE;
    }
    if (!strcmp(from, "torch-trace"))
        *src = SRC_TORCH;
    else if (!strcmp(from, "megatron"))
        *src = SRC_MEGATRON;
    else if (!strcmp(from, "zbexec"))
        *src = SRC_ZBEXEC;
    else {
        cli_error("profile: --from must be torch-trace, megatron or zbexec, "
                  "got '%s'", from);
        return CLI_USAGE;
    }
    if ((rc = number_opt(a, "pp", &o->pp)) != CLI_OK ||
        (rc = number_opt(a, "vpp", &o->vpp)) != CLI_OK ||
        (rc = number_opt(a, "mb", &o->microbatches)) != CLI_OK)
        return rc;
    if (pl) {
        if (zb_placement_parse(pl, &o->placement) < 0) {
            cli_error("profile: --placement must be loop or v, got '%s'",
                      pl);
            return CLI_USAGE;
        }
        o->placement_set = true;
    }
    o->unit = cli_get(a, "time-unit");
    if (o->unit && strcmp(o->unit, "us") && strcmp(o->unit, "ms") &&
        strcmp(o->unit, "s")) {
        cli_error("profile: --time-unit must be us, ms or s, got '%s'",
                  o->unit);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* A zbexec --profile-out file is a profile already: checked, kept. */
static bool is_profile(const char *text)
{
    return !strstr(text, "\"traceEvents\"") && strstr(text, "\"pp\"");
}

static int measure(enum source src, const struct files *f,
                   const struct zb_measure_opts *o, struct zb_measured *m)
{
    struct zb_error err = { 0 };
    struct zb_run run;
    char **texts = zb_xcalloc((size_t)f->n, sizeof(char *));
    int rc = CLI_OK;

    zb_run_init(&run);
    for (int i = 0; i < f->n && rc == CLI_OK; i++)
        rc = read_file(f->path[i], &texts[i]);
    if (rc != CLI_OK)
        goto out;
    if (src == SRC_MEGATRON) {
        if (zb_measure_megatron((const char *const *)texts, f->n, o, m,
                                &err) < 0)
            rc = cli_fail(&err);
        goto out;
    }
    for (int i = 0; i < f->n; i++) {
        int r = src == SRC_TORCH
            ? zb_run_add_torch_trace(&run, texts[i], &err)
            : zb_run_add_zbexec_trace(&run, texts[i], &err);
        if (r < 0) {
            rc = cli_fail_file(f->path[i], &err);
            goto out;
        }
    }
    if (zb_measure_run(&run, o, m, &err) < 0)
        rc = cli_fail(&err);
    else
        snprintf(m->source, sizeof(m->source), "%s",
                 src == SRC_TORCH ? "torch-trace" : "zbexec");
out:
    for (int i = 0; i < f->n; i++)
        free(texts[i]);
    free(texts);
    zb_run_release(&run);
    return rc;
}

/* zbexec's --profile-out: read as generate would, written back as is. */
static int copy_profile(const char *path, const char *text, const char *out)
{
    struct zb_profile_draft d;
    struct zb_profile p = { 0 };
    struct zb_error err = { 0 };
    char *json;
    int rc = CLI_OK;

    zb_profile_draft_init(&d);
    if (zb_json_parse_profile(text, &d, &err) < 0 ||
        zb_profile_build(&d, &p, &err) < 0) {
        zb_profile_draft_release(&d);
        return cli_fail_file(path, &err);
    }
    zb_profile_draft_release(&d);
    json = zb_json_format_profile(&p);
    if (zb_io_write_file(out, json, strlen(json), &err) < 0)
        rc = cli_fail(&err);
    free(json);
    zb_profile_release(&p);
    return rc;
}

static void summary(const struct zb_measured *m, int files, const char *out)
{
    fprintf(stderr, "zbsched: profile: %d %s from %d file%s (%s, %s%s), "
            "pp %d, vpp %d, %d microbatches, placement %s, times in %s -> "
            "%s\n", m->n, m->per_rank ? "ranks" : "stages", files,
            files == 1 ? "" : "s", m->source, m->clock,
            strcmp(m->clock, "timers") ? " time" : "", m->pp, m->vpp,
            m->microbatches, zb_placement_name(m->placement), m->unit, out);
    if (m->fused)
        cli_warn("profile: the backward was timed whole: B holds W and W is "
                 "0 (see 'zbsched check-profile')");
    if (!m->memory)
        cli_warn("profile: the input holds no memory sizes: M_B and M_W are "
                 "1 (set memory.M_B and memory.M_W, or --m-b and --m-w)");
    if (m->comm.samples == 0)
        cli_warn("profile: no transfer was measured: comm is 0");
}

static int run(const struct cli_args *a)
{
    struct files f = { 0 };
    struct zb_measure_opts o;
    struct zb_measured m;
    struct zb_profile p = { 0 };
    struct zb_error err = { 0 };
    const char *out = cli_get(a, "output") ? cli_get(a, "output") : "-";
    enum source src;
    char *json = NULL;
    int rc;

    zb_measured_init(&m);
    if ((rc = options(a, &src, &o)) != CLI_OK)
        return rc;
    for (int i = 0; i < a->npos && rc == CLI_OK; i++)
        rc = expand(a->pos[i], &f);
    if (rc != CLI_OK)
        goto out;
    if (src == SRC_ZBEXEC && f.n == 1) {
        char *text;
        if ((rc = read_file(f.path[0], &text)) != CLI_OK)
            goto out;
        if (is_profile(text)) {
            static const char *const shape[] = { "pp", "vpp", "mb",
                                                 "placement", "time-unit" };
            for (size_t i = 0; i < 5 && rc == CLI_OK; i++)
                rc = cli_not_here(a, shape[i], "to a zbexec --profile-out "
                                  "file (copied as it is)");
            if (rc == CLI_OK)
                rc = copy_profile(f.path[0], text, out);
            free(text);
            goto out;
        }
        free(text);
    }
    if ((rc = measure(src, &f, &o, &m)) != CLI_OK)
        goto out;
    if (zb_measured_profile(&m, &p, &err) < 0) {
        rc = cli_fail(&err);
        goto out;
    }
    json = zb_json_format_measured(&p, &m);
    if (zb_io_write_file(out, json, strlen(json), &err) < 0)
        rc = cli_fail(&err);
    else if (!cli_has(a, "quiet"))
        summary(&m, f.n, out);
out:
    free(json);
    zb_profile_release(&p);
    zb_measured_release(&m);
    for (int i = 0; i < f.n; i++)
        free(f.path[i]);
    free(f.path);
    return rc;
}

static const struct cli_opt opts[] = {
    { "from", 0, "FORMAT", "torch-trace, megatron or zbexec (required)" },
    CLI_OPT_OUTPUT("the profile"),
    { "pp", 0, "N", "ranks (default: from the input)" },
    { "vpp", 0, "N", "chunks per rank (default: from the input)" },
    { "mb", 0, "N", "microbatches (default: from the input)" },
    { "placement", 0, "loop|v", "placement (default: from the input; "
      "megatron: loop)" },
    { "time-unit", 0, "us|ms|s", "unit of the profile's times (default ms)" },
    CLI_OPT_QUIET,
    { NULL, 0, NULL, NULL },
};

const struct cli_command cmd_profile = {
    .name = "profile", .run = run,
    .summary = "measure a profile from PyTorch, Megatron or zbexec traces",
    .args = "FILE...", .min_args = 1, .max_args = CLI_MAX_ARGS,
    .groups = { { "options", opts } },
    .notes = "torch-trace: one torch.profiler Chrome trace per rank (or a "
             "directory of them);\nmegatron: training logs; zbexec: a "
             "--trace file (or --profile-out, copied).\nEach median's p10, "
             "p90 and sample count go into the profile's \"measured\"\n"
             "object (docs/profiles.md).\n",
};
