/* json_plan.c - the Plan JSON writer (split.h; DESIGN.md "Plan JSON"):
 * the split, its predicted measures and memory per rank, the baselines,
 * what Megatron and torchtitan take, and the schedule document itself. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "strbuf.h"
#include "zbsched/json.h"
#include "zbsched/split.h"

/* A number, or null where it is not known (a split never scheduled). */
static void num_or_null(struct strbuf *sb, bool known, double v)
{
    if (known)
        zbi_sb_add_num(sb, v);
    else
        zbi_sb_add(sb, "null");
}

static void counts(struct strbuf *sb, const struct zb_plan_split *s)
{
    zbi_sb_add(sb, "[");
    for (int i = 0; i < s->nstages; i++) {
        if (i)
            zbi_sb_add(sb, ", ");
        zbi_sb_add_int(sb, s->counts[i]);
    }
    zbi_sb_add(sb, "]");
}

/* A baseline's cost, whether it fits, and its largest rank total (with
 * one microbatch in flight where it was never scheduled). */
static void baseline(struct strbuf *sb, const char *name,
                     const struct zb_plan_split *s, int pp, bool last)
{
    double peak = 0;

    for (int r = 0; s->exists && r < pp; r++)
        peak = fmax(peak, s->ranks[r].total);
    zbi_sb_addf(sb, "    \"%s\": ", name);
    if (!s->exists) {
        zbi_sb_addf(sb, "null%s\n", last ? "" : ",");
        return;
    }
    zbi_sb_add(sb, "{\"cost\": ");
    num_or_null(sb, s->scheduled, s->cost);
    zbi_sb_addf(sb, ", \"fits\": %s, \"memory_bytes\": ",
                s->fits ? "true" : "false");
    zbi_sb_add_num(sb, peak);
    zbi_sb_add(sb, ", \"layers_per_stage\": ");
    counts(sb, s);
    zbi_sb_addf(sb, "}%s\n", last ? "" : ",");
}

/* Layer names of stage i, as a JSON list. */
static void stage_layers(struct strbuf *sb, const struct zb_model *m,
                         const struct zb_plan_split *s, int i)
{
    int at = 0;

    for (int k = 0; k < i; k++)
        at += s->counts[k];
    zbi_sb_add(sb, "[");
    for (int k = 0; k < s->counts[i]; k++) {
        if (k)
            zbi_sb_add(sb, ", ");
        zbi_sb_add_str(sb, m->layers[at + k].name);
    }
    zbi_sb_add(sb, "]");
}

static void predicted(struct strbuf *sb, const struct zb_plan *p, int pp)
{
    const struct zb_plan_split *b = &p->best;

    zbi_sb_add(sb, "  \"predicted\": {\"cost\": ");
    num_or_null(sb, b->scheduled, b->cost);
    zbi_sb_add(sb, ", \"makespan\": ");
    num_or_null(sb, b->scheduled, b->makespan);
    zbi_sb_add(sb, ", \"bubble_ratio\": ");
    num_or_null(sb, b->scheduled, b->bubble_ratio);
    zbi_sb_add(sb, ", \"lower_bound\": ");
    zbi_sb_add_num(sb, p->lower_bound);
    zbi_sb_add(sb, ", \"gap\": ");
    num_or_null(sb, b->scheduled && p->lower_bound > 0,
                b->cost / p->lower_bound - 1);
    zbi_sb_add(sb, ", \"bound_by\": ");
    if (!b->fits)
        zbi_sb_add(sb, "null");
    else if (p->binding_rank < 0)
        zbi_sb_add(sb, "\"time\"");
    else
        zbi_sb_addf(sb, "\"memory of rank %d\"", p->binding_rank);
    zbi_sb_add(sb, ",\n                \"ranks\": [");
    for (int r = 0; r < pp; r++) {
        const struct zb_memory_rank *k = &b->ranks[r];
        zbi_sb_add(sb, r ? ",\n                  " : "");
        zbi_sb_add(sb, "{\"memory_bytes\": ");
        zbi_sb_add_num(sb, k->total);
        zbi_sb_add(sb, ", \"activation_bytes\": ");
        zbi_sb_add_num(sb, k->activations);
        zbi_sb_add(sb, ", \"model_state_bytes\": ");
        zbi_sb_add_num(sb, k->model_state);
        zbi_sb_add(sb, ", \"buffer_bytes\": ");
        zbi_sb_add_num(sb, k->buffers);
        zbi_sb_add(sb, "}");
    }
    zbi_sb_add(sb, "]},\n");
}

static void trainers(struct strbuf *sb, const struct zb_model *m,
                     const struct zb_plan_request *rq,
                     const struct zb_plan_split *b)
{
    char *layout = zb_plan_megatron_layout(m, b);

    zbi_sb_add(sb, "  \"megatron\": ");
    if (layout) {
        zbi_sb_add(sb, "{\"pipeline_model_parallel_layout\": ");
        zbi_sb_add_str(sb, layout);
        zbi_sb_add(sb, "},\n");
        free(layout);
    } else {
        zbi_sb_add(sb, "null,\n");
    }
    zbi_sb_add(sb, "  \"torchtitan\": {\"module_fqns_per_model_part\": [");
    for (int i = 0; i < b->nstages; i++) {
        zbi_sb_add(sb, i ? ",\n      " : "\n      ");
        stage_layers(sb, m, b, i);
    }
    zbi_sb_add(sb, "],\n    \"pipeline_parallel_schedule\": ");
    zbi_sb_add_str(sb, zb_plan_torchtitan_schedule(b));
    zbi_sb_addf(sb, ", \"num_pp_microbatches\": %d},\n", rq->microbatches);
}

char *zb_plan_format_json(const struct zb_model *m,
                          const struct zb_plan_request *rq,
                          const struct zb_plan *p)
{
    const struct zb_plan_split *b = &p->best;
    struct strbuf sb;

    zbi_sb_init(&sb);
    zbi_sb_add(&sb, "{\n  \"format\": \"zbsched-plan\", \"version\": 1,\n"
                    "  \"model\": ");
    zbi_sb_add_str(&sb, m->name);
    zbi_sb_addf(&sb, ", \"pp\": %d, \"vpp\": %d, \"placement\": \"%s\", "
                "\"microbatches\": %d,\n", rq->pp, b->vpp,
                zb_placement_name(b->placement), rq->microbatches);
    zbi_sb_addf(&sb, "  \"schedule_name\": \"zb\", \"time_unit\": \"%s\", "
                "\"gpu_memory_bytes\": ", zb_time_unit_name(m->time_unit));
    zbi_sb_add_num(&sb, rq->gpu_mem);
    zbi_sb_add(&sb, ", \"layers_per_stage\": ");
    counts(&sb, b);
    zbi_sb_add(&sb, ",\n  \"stages\": [");
    for (int i = 0; i < b->nstages; i++) {
        struct zb_profile sh = { .pp = rq->pp, .vpp = b->vpp,
                                 .placement = b->placement };
        zbi_sb_addf(&sb, "%s{\"stage\": %d, \"rank\": %d, \"layers\": ",
                    i ? ",\n    " : "\n    ", i,
                    zb_profile_stage_rank(&sh, i));
        stage_layers(&sb, m, b, i);
        zbi_sb_add(&sb, "}");
    }
    zbi_sb_addf(&sb, "],\n  \"fits\": %s,\n", b->fits ? "true" : "false");
    predicted(&sb, p, rq->pp);
    zbi_sb_add(&sb, "  \"baselines\": {\n");
    baseline(&sb, "even", &p->even, rq->pp, false);
    baseline(&sb, "minmax", &p->minmax, rq->pp, true);
    zbi_sb_add(&sb, "  },\n");
    trainers(&sb, m, rq, b);
    zbi_sb_add(&sb, "  \"schedule\": ");
    if (b->sched.ranks) {
        char *doc = zb_json_format_schedule(&b->sched);
        size_t n = strlen(doc);
        while (n > 0 && doc[n - 1] == '\n')
            doc[--n] = '\0';
        zbi_sb_add(&sb, doc);
        free(doc);
    } else {
        zbi_sb_add(&sb, "null");
    }
    zbi_sb_add(&sb, "\n}\n");
    return zbi_sb_detach(&sb);
}
