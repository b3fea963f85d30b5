/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv-check --pairs: every pair of nodes measured in the rounds of a
 * round-robin tournament (pairs_plan.h), judged at rank 0
 * (pairs_verdict.h), printed and written by pairs_report.c. pairs.c is
 * the sweep's transport (authenticated data connections, as the ring's),
 * pairs_rounds.c its part of the rendezvous: what each rank does per
 * round, and the hook rank 0's server calls when a round is complete. */
#ifndef DISTENV_CHECK_PAIRS_H
#define DISTENV_CHECK_PAIRS_H

#include <stddef.h>
#include <stdint.h>

#include "check.h"
#include "pairs_plan.h"
#include "pairs_verdict.h"

/* What a DE_PURPOSE_PAIR connection is asked, in its 16-byte command. */
#define PAIR_OP_PING 1   /* echo 16-byte messages until EOF */
#define PAIR_OP_SINK 2   /* receive up to len bytes within the bound, answer moved + time */
#define PAIR_OP_SOURCE 3 /* send up to len bytes within the bound */
/* Each direction's transfer stops at --pair-bytes or this, whichever
 * comes first; a connection that is not answered within PAIR_CONNECT_MS
 * failed. Together they bound a round, whatever the network does. */
#define PAIR_TIME_MS 2000
#define PAIR_CONNECT_MS 3000
#define PAIR_PINGS 20
#define PAIR_REPEATS 3 /* transfers per direction, the best kept */
#define PAIR_MIN_BYTES (64u << 10)
/* The NCCL pair (pairs_nccl.c): init, the allreduces and teardown, per side. */
#define PAIR_NCCL_MS 10000

struct de_pairs_state {
	uint32_t n;              /* nodes */
	uint32_t *leader;        /* node -> its lowest rank, the one that measures */
	uint32_t mynode;
	int lead;                /* this rank measures for its node */
	uint32_t rounds;         /* of the tournament */
	char nccl_skip[DE_ERR_MAX + 64]; /* why no NCCL pairs from here; "" when they run */
	int nccl_on;             /* NCCL is usable here: this node's leader measures NCCL pairs */
	struct de_pairs_nccl_sum nsum; /* rank 0, once judged */
	/* rank 0 only: written by the server thread before each GO, read
	 * by rank 0's main thread after the last one */
	struct de_pair_result *res;   /* de_pair_index order */
	struct de_pair_job *jobs;     /* the retests, planned after the tournament */
	struct de_pair_retest *rt;
	size_t njobs;                 /* all jobs: the node retests, then the slow pairs again */
	size_t nretest;               /* the node retests among them (the first ones) */
	uint32_t rt_rounds;
	int cur_kind;                 /* the phase announced last: 'T', 'R' or 'E' */
	uint32_t cur_round;
	char probe[2048];             /* the node probe's failures, if any */
	struct de_pairs_verdict v;
	int judged;
	int64_t t0;
	double sweep_ms;
};

/* After the join: the node table, the plan; rank 0 also the result table. */
int de_pairs_prepare(struct de_check *c, struct de_fail *f);
void de_pairs_free(struct de_check *c);
/* The sweep, after the probe (its outcome in probe_rc / f): every round,
 * then the retests. 0 when the job's verdict is clean, 1 when pairs
 * failed or outliers were named, -1 when the run itself failed (f). */
int de_pairs_run(struct de_check *c, int probe_rc, struct de_text *probe_rep,
		 struct de_fail *f);
/* rank 0's server, when every rank reported phase `phase`: takes the
 * reports (by rank), writes the next GO (its round record); 1 another
 * phase follows, 0 that was the last, -1 abort with f. */
int de_pairs_phase_done(struct de_check *c, int phase, const struct de_text *const *rep,
			struct de_text *go, struct de_fail *f);
/* pairs.c, the transport. acceptor.c: serve one authenticated
 * DE_PURPOSE_PAIR connection (takes fd). */
void de_pairs_serve_start(const struct de_check *c, int fd, int64_t deadline);
/* An authenticated pair connection to peer's data port, asked op; 0 with
 * *fdp (nonblocking), or -1 with r's diag and why. */
int de_pairs_open(struct de_check *c, uint32_t peer, uint32_t op, uint64_t len, int *fdp,
		  struct de_pair_result *r);
/* pairs_nccl.c: the calling side of the pair's NCCL allreduce (r's nccl
 * fields), and the called side, served on fd (the unique id follows the
 * command) by the acceptor's thread. */
void de_pairs_nccl_measure(struct de_check *c, uint32_t peer, struct de_pair_result *r);
void de_pairs_nccl_serve(const struct de_check *c, int fd, int64_t deadline);
/* This node with the node of rank peer: latency, then both directions. */
void de_pairs_measure(struct de_check *c, uint32_t peer, struct de_pair_result *r);
/* A pair in a round's report: its record, why it failed as the text. */
void de_pairs_to_rec(struct de_text *t, uint32_t a, uint32_t b, const struct de_pair_result *r);

#endif
