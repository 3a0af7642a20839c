/* construct_v_run.h - one run of the ZB-V construction (private to
 * build/construct_v*.c): the rules a run follows on each rank, its
 * state, and the run itself (construct_v_run.c). construct_v.c makes many
 * runs under different rules and keeps the best. */
#ifndef ZBSCHED_CONSTRUCT_V_RUN_H
#define ZBSCHED_CONSTRUCT_V_RUN_H

#include <stdbool.h>
#include "zbsched/measures.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* The rules one rank follows in a run (construct_v.c chooses them:
 * steps 5 and 6). */
struct variant {
    bool fill_f;    /* a gap over the slack before an F gets one more W */
    bool fill_b;    /* likewise before a first-leg B (second leg: always) */
    bool warm_idle; /* warm-up F while the rank is still idle when the
                       input arrives, else only if it ends by then */
    int reserve;    /* room a chunk-0 F leaves for chunk-1 F passes:
                       RESERVE_* */
    bool drain_first; /* once a rank has run all its F: first-leg B
                       before second-leg B (see choose_leg()) */
    int warm_extra;   /* warm-up F passes a rank may run past the first
                       backward wave's arrival (see warm_balance()): the
                       extra microbatch in flight absorbs uneven times;
                       negative: it stops that many F passes earlier */
    bool early_leg;   /* the B leg whose input arrives first (see
                         choose_leg()) */
    bool f_first;     /* in each round, the rank's F before its B (see
                         rounds()): one more microbatch in flight where
                         memory allows (no variant; step 6 sets it) */
    bool b_room;      /* an F that does not fit runs a B whose input is
                         there first (place_f(); build.h): set by
                         the caller's rules for every variant, switched
                         per rank by step 6 */
};

enum {
    RESERVE_NONE,   /* none: fastest, may stall at tight limits */
    RESERVE_ONE,    /* one, for the oldest microbatch in flight */
    RESERVE_ALL     /* one per microbatch in flight: never stalls */
};

/* The rules a run's decisions turned on (struct vc.mattered, per rank, a
 * bit per rule): set when a decision on that rank would have gone the
 * other way under the rank's rules with that one rule changed (warm_extra
 * one longer or shorter; the reserve between none and one). Rules under
 * which every run of a refinement chain made the same decisions make the
 * same chain: twin_done() and next_move() skip such chains (a good part
 * of a construction's runs on long profiles). f_first is not tracked:
 * its moves always run. */
enum {
    RULE_FILL_F = 1 << 0,
    RULE_FILL_B = 1 << 1,
    RULE_WARM_IDLE = 1 << 2,
    RULE_LONGER = 1 << 3,       /* warm_extra + 1 */
    RULE_SHORTER = 1 << 4,      /* warm_extra - 1 */
    RULE_RESERVE = 1 << 5,
    RULE_DRAIN_FIRST = 1 << 6,
    RULE_EARLY_LEG = 1 << 7,
    RULE_B_ROOM = 1 << 8
};

/* One run's state. The arrays are allocated once per worker
 * (zbi_vc_alloc()) and reset for each of its runs (vc_reset()): a
 * construction makes dozens of runs, up to TUNE_BUDGET's worth. */
struct vc {
    const struct zb_profile *p;
    const struct variant *var;  /* per rank: its rules */
    struct zb_schedule *s;      /* the order being built, with times; NULL:
                                   not recorded (see refine()) */
    int pp, m;
    double eps;                 /* time tolerance */
    double *end;                /* per pass; NAN until placed */
    double *clock, *bubble;     /* per rank: free at, idle */
    struct zb_rank_tally *tally; /* per rank: busy, span, memory (with the
                                   running sum fits() reads) */
    double *work;               /* per rank: total busy time */
    const double *limit;        /* per rank: memory it may use */
    const double *headroom;     /* per rank: refinement slack, or NULL */
    double worst;               /* max over ranks of work + bubble */
    double delta[3];            /* memory change of an F, B, W */
    int (*nf)[2], (*nb)[2], (*nw)[2]; /* per rank, chunk: next microbatch */
    int *wq, *wq_head, *wq_tail; /* per rank: FIFO of pending W chunks */
    int *leg;                   /* per rank: B chunk chosen this round */
    long fb_left;               /* F and B passes still to place */
    unsigned *mattered;         /* per rank: RULE_* bits the runs since
                                   refine() cleared them turned on */
};

/* Allocate v's arrays for runs on p (construct_v_run.c). */
void zbi_vc_alloc(struct vc *v, const struct zb_profile *p);
void zbi_vc_release(struct vc *v);

/* One construction in v, rank r under var[r], each rank within limit[r];
 * headroom may be NULL; the order is recorded into s (empty lists)
 * unless s is NULL. 0, or -1 when the run stalls. */
int zbi_vc_run(struct vc *v, const struct variant *var, const double *limit,
               const double *headroom, struct zb_schedule *s);

/* The measures of v's last run, from the times its passes got, which
 * follow the simulator's rule exactly (tests check that they agree). */
void zbi_vc_measures(const struct vc *v, struct zb_measures *ms);

#endif
