/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pair sweep's schedule: which nodes meet in which round. Pure.
 *
 * A round-robin tournament by the circle method: node n-1 (or, for odd
 * n, a phantom node n whose partner sits the round out) stays put while
 * the others turn one place per round. Every pair meets exactly once,
 * every node is in at most one pair per round, and all pairs of a round
 * run at once: n-1 rounds for even n, n for odd. A node finds its own
 * partner in O(1), so no rank needs the whole table. */
#ifndef DISTENV_PAIRS_PLAN_H
#define DISTENV_PAIRS_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "proto.h"

#define DE_PAIR_NONE UINT32_MAX

/* One pair: a < b; a calls b. */
struct de_pair_ij {
	uint32_t a, b;
};

/* Rounds for n nodes: 0 for n < 2, n-1 for even n, n for odd. */
uint32_t de_pairs_rounds(uint32_t n);
/* node's partner in round r (0-based), or DE_PAIR_NONE (a bye, or out of range). */
uint32_t de_pairs_partner(uint32_t n, uint32_t r, uint32_t node);
/* The pairs of round r into out (room for n/2), a < b, by a; returns how many. */
size_t de_pairs_round(uint32_t n, uint32_t r, struct de_pair_ij *out);
/* Pairs in all: n(n-1)/2. */
size_t de_pairs_count(uint32_t n);
/* The index of pair {a, b} (a != b, both < n) in 0..count-1, row by row. */
size_t de_pair_index(uint32_t n, uint32_t a, uint32_t b);

/* The retest: each node of a failed pair is measured once more against a
 * known-good node (the fewest failures, then the least used), as
 * ncclscout does, to tell a bad node from a bad link. suspect[x] set:
 * node x needs one. fails[x]: its failed pairs in the sweep. Jobs are
 * packed into rounds (each node at most once per round). Returns the
 * number of jobs in jobs (room for n) and *rounds, or -1 with err. */
struct de_pair_job {
	uint32_t node, with, round;
	int remeasure; /* a slow pair measured again (node < with), not a retest */
};
/* Packs jobs[0..k) into rounds, greedily, each node at most once per
 * round and at most DE_PROTO_MAX_JOBS jobs a round (what one GO
 * announces): sets each job's round, returns the number of rounds. */
uint32_t de_pairs_pack(uint32_t n, struct de_pair_job *jobs, size_t k, uint8_t *busy);
int de_pairs_retest_plan(uint32_t n, const uint8_t *suspect, const uint32_t *fails,
			 struct de_pair_job *jobs, size_t *njobs, uint32_t *rounds,
			 struct de_err *err);

#endif
