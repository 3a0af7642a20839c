/* test_families_peers.c - the named families against their peers' own
 * orders on the same input: the Zero Bubble repository's V-Half and V-Min
 * and PyTorch's DualPipeV, InterleavedZeroBubble and ZBVZeroBubble (for
 * zb-v, at m below p too, which PyTorch allows) (tests/data/peers/,
 * written by tools/peer_orders.py from reading their source), timed by our
 * simulator on seeded uneven profiles; ours must cost no more at no more
 * peak memory. Run from the repository root (as `make test` does). */
#include <stdio.h>
#include <string.h>
#include "helpers.h"
#include "zbsched/measures.h"
#include "zbsched/torch.h"

/* The fixtures: family, peer, p, m (file tests/data/peers/PEER-pP-mM.csv,
 * PEER as tools/peer_orders.py names it). */
static const struct {
    const char *family, *peer;
    int pp, mb;
} fixtures[] = {
    { "v-half", "v-half", 4, 8 }, { "v-half", "v-half", 6, 12 },
    { "v-half", "v-half", 8, 16 },
    { "v-min", "v-min", 4, 8 }, { "v-min", "v-min", 6, 12 },
    { "v-min", "v-min", 8, 16 },
    { "dualpipev", "dualpipev", 4, 8 }, { "dualpipev", "dualpipev", 4, 16 },
    { "dualpipev", "dualpipev", 8, 16 },
    { "interleaved-zb", "interleaved-zb", 4, 6 },
    { "interleaved-zb", "interleaved-zb", 4, 8 },
    { "interleaved-zb", "interleaved-zb", 8, 16 },
    { "zb-v", "zbv", 4, 2 }, { "zb-v", "zbv", 4, 4 }, { "zb-v", "zbv", 4, 8 },
    { "zb-v", "zbv", 4, 16 }, { "zb-v", "zbv", 8, 16 },
};

#define SEEDS 4

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text;
    long n;

    cr_assert_not_null(f, "%s: not found (run from the repository root)",
                       path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    text = malloc((size_t)n + 1);
    cr_assert_eq(fread(text, 1, (size_t)n, f), (size_t)n, "%s", path);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* Two chunks per rank (V placement, or loop for interleaved-zb), uneven
 * stages, comm and M_W drawn (seed 0: the even profile at unit times). */
static void uneven(const char *family, int pp, int mb, unsigned seed,
                   struct zb_profile *p)
{
    struct shape sh = { pp, 2, mb,
                        strcmp(family, "interleaved-zb") ? ZB_PLACEMENT_V
                                                         : ZB_PLACEMENT_LOOP,
                        1, 1, 1, 0, 1, 1, INFINITY };

    make_profile(&sh, p);
    if (seed == 0)
        return;
    p->comm = rand_r(&seed) % 3 ? uniform(&seed, 0, 0.3) : 0;
    p->m_w = uniform(&seed, 0.2, 1);
    for (int s = 0; s < 2 * pp; s++)
        p->stage[s] = (struct zb_stage_times){ uniform(&seed, 0.5, 2),
                                               uniform(&seed, 0.5, 2.5),
                                               uniform(&seed, 0.2, 1.5) };
}

Test(families_peers, no_worse_than_the_peers_order)
{
    for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
        char path[128];
        char *text;
        struct zb_torch_csv csv;
        struct zb_error err = { 0 };

        snprintf(path, sizeof(path), "tests/data/peers/%s-p%d-m%d.csv",
                 fixtures[i].peer, fixtures[i].pp, fixtures[i].mb);
        text = slurp(path);
        cr_assert_eq(zb_torch_csv_parse(text, &csv, &err), 0, "%s: %s",
                     path, err.msg);
        for (unsigned seed = 0; seed < SEEDS; seed++) {
            struct zb_profile p;
            struct zb_schedule peer, ours;
            double pc, oc, pk, ok;

            uneven(fixtures[i].family, fixtures[i].pp, fixtures[i].mb,
                   seed ? 7919 * seed + (unsigned)i : 0, &p);
            cr_assert_eq(zb_torch_csv_schedule(&csv, &p, "peer", &peer,
                                               &err), 0, "%s: %s", path,
                         err.msg);
            gen(fixtures[i].family, &p, &ours);
            pc = peer.predicted.cost;
            oc = ours.predicted.cost;
            pk = zb_measures_max_peak(&peer.predicted, p.pp);
            ok = zb_measures_max_peak(&ours.predicted, p.pp);
            cr_assert(oc <= pc * (1 + 1e-9), "%s seed %u: cost %g > %g",
                      path, seed, oc, pc);
            cr_assert(ok <= pk * (1 + 1e-9), "%s seed %u: peak %g > %g",
                      path, seed, ok, pk);
            zb_schedule_release(&peer);
            zb_schedule_release(&ours);
            zb_profile_release(&p);
        }
        zb_torch_csv_release(&csv);
        free(text);
    }
}
