/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What rank 0's rendezvous concludes from what the ranks told it, pure
 * (no sockets, no clock): which rank and which words are the job's
 * verdict once a phase's reports are in, which probe failures are judged
 * together and which go on into the pair sweep, who rank 0 still waits
 * for, and the list of the ranks that never came. The server
 * (src/check/rdv_*.c) owns the connections and tells every rank. */
#ifndef DISTENV_RDV_VERDICT_H
#define DISTENV_RDV_VERDICT_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "proto.h"

/* The job as rank 0 knows it before anyone comes. */
struct de_rdv_job {
	uint32_t world;
	const char *master;       /* MASTER_ADDR */
	uint16_t master_port;
	char *const *expect_host; /* rank -> the host Slurm placed it on (entries may be NULL), or NULL */
	const char *nodelist;     /* the step's nodes, or NULL */
};

/* One rank as rank 0 sees it, by rank. */
struct de_rdv_rank {
	int joined;        /* admitted: its HELLO passed */
	int reported;      /* reported the current phase */
	const char *host;  /* joined: where it runs */
	enum de_diag diag; /* its report: DE_OK or why it failed */
	const char *text;  /* its report's text */
	const struct de_unreached_rec *unreached; /* the probe's: whom it failed to reach, or NULL */
};

#define DE_RDV_BLAME_MAX 64u

/* The job's verdict: one diagnosis, the rank it is about, the words every
 * rank prints (as long as an ABORT frame carries). */
struct de_rdv_verdict {
	enum de_diag diag;
	uint32_t rank;
	char text[sizeof(((struct de_text *)0)->text)];
	/* The ranks whose nodes the verdict blames (the resubmit hint,
	 * exclude.h), and whether it is sure: 0 when one of them is at fault
	 * and which is not known. None for what no node is to blame for (a
	 * wrong LOCAL_RANK, a usage error). */
	uint32_t nblame;
	uint32_t blame[DE_RDV_BLAME_MAX];
	int blame_sure;
};

/* A report of a collective (phase > 0) that failed ends the job at once:
 * the other ranks may be blocked inside it (NCCL). The probe (phase 0)
 * waits for every report, to name the node everyone fails to reach. */
int de_rdv_ends_at_once(int phase, enum de_diag d);
/* Without --pairs, a probe failure judged with the others'
 * (de_rdv_judge_probe); any other failure in the probe phase is the
 * verdict by itself (its name is loopback, ...). */
int de_rdv_probe_together(enum de_diag d);
/* --pairs: a probe failure that goes on into the sweep, whose verdict
 * names it; any other failure ends the job as always. */
int de_rdv_probe_goes_on(enum de_diag d);

/* The probe's report of rank `prober` (its node's first): does its
 * record name host as one it failed to reach (a rank of it, listed)? */
int de_rdv_probe_names(const struct de_rdv_rank *r, uint32_t world, uint32_t prober,
		       const char *host);

/* Is d a fault of the node the rank runs on (its own name resolves to
 * loopback, its NCCL does not load), rather than of the job or a link? */
int de_rdv_node_fault(enum de_diag d);
/* The ranks that never joined and whose node Slurm named (j->expect_host),
 * blamed as sure: a node whose ranks never came. */
void de_rdv_blame_missing(const struct de_rdv_job *j, const struct de_rdv_rank *r,
			  struct de_rdv_verdict *v);

/* "rank R on HOST: TEXT", about R; R blamed when d is a node fault. */
void de_rdv_rank_failed(struct de_rdv_verdict *v, uint32_t rank, const char *host,
			enum de_diag d, const char *text);
/* The probe's failures (r[0..world) all reported, one prober per node,
 * probers nodes), judged together: a bulk stall when every failure is
 * one, the node every other node fails to reach when there is one (with
 * more than two nodes), else the failing connections; about rank 0. */
void de_rdv_judge_probe(const struct de_rdv_rank *r, uint32_t world, uint32_t probers,
			struct de_rdv_verdict *v);
/* Every rank reported phase `phase` (without --pairs): 0 when all passed
 * (GO), 1 with v the job's verdict: the first failing rank by number,
 * except in the probe, where a failure of a rank's own (the first one)
 * comes before the probe failures judged together. */
int de_rdv_judge_phase(const struct de_rdv_rank *r, uint32_t world, int phase,
		       uint32_t probers, struct de_rdv_verdict *v);
/* --pairs, every rank reported phase `phase`: 1 with v (the first such
 * rank) when a failure ends the job (any after the probe; in the probe,
 * one that does not go on), else 0: the reports go to the sweep. */
int de_rdv_judge_pairs_phase(const struct de_rdv_rank *r, uint32_t world, int phase,
			     struct de_rdv_verdict *v);

/* " (expected on HOST)", " (expected on one of NODELIST)" or "": buf. */
const char *de_rdv_expected_where(const struct de_rdv_job *j, uint32_t rank, char *buf,
				  size_t len);
/* Who rank 0 still waits for: while gathering, the ranks that have not
 * joined (with where they are expected); in a phase, those that have not
 * reported (with their host). The first 12 by number, then ", ... (N
 * more)", within len. Returns how many. */
uint32_t de_rdv_waiting_for(const struct de_rdv_job *j, const struct de_rdv_rank *r,
			    int gathering, char *out, size_t len);
/* The gathering ran out (secs after it began): "N of W ranks never
 * reached MASTER:PORT in S s: ranks LIST", the list cut at a rank to fit
 * len, with a note when connections were refused for authentication. */
void de_rdv_missing(const struct de_rdv_job *j, const struct de_rdv_rank *r, double secs,
		    unsigned rejected, char *out, size_t len);

#endif
