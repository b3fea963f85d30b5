/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rdouble.h"
#include "tap.h"

#define MAXN 70u

/* Runs the schedule for n ranks on vectors of per-rank counts (rank r
 * starts with 1 at r) and says whether every rank ends with every rank
 * counted exactly once; *asym is set when some step's partner does not
 * name r back. */
static int simulate(uint32_t n, int *asym)
{
	static uint32_t cur[MAXN][MAXN], nxt[MAXN][MAXN];
	uint32_t r, q, k, i;

	memset(cur, 0, sizeof(cur));
	for (r = 0; r < n; r++)
		cur[r][r] = 1;
	/* fold */
	for (r = 0; r < n; r++)
		if (de_rd_role(r, n) == DE_RD_FOLD_HOST)
			for (i = 0; i < n; i++)
				cur[r][i] += cur[de_rd_fold_peer(r, n)][i];
	for (k = 0; k < de_rd_steps(n); k++) {
		memcpy(nxt, cur, sizeof(cur));
		for (r = 0; r < n; r++) {
			if (de_rd_role(r, n) == DE_RD_FOLDED)
				continue;
			q = de_rd_partner(r, n, k);
			if (q == r || q >= n || de_rd_partner(q, n, k) != r ||
			    de_rd_role(q, n) == DE_RD_FOLDED)
				*asym = 1;
			if (q < n)
				for (i = 0; i < n; i++)
					nxt[r][i] = cur[r][i] + cur[q][i];
		}
		memcpy(cur, nxt, sizeof(cur));
	}
	/* unfold */
	for (r = 0; r < n; r++)
		if (de_rd_role(r, n) == DE_RD_FOLDED)
			memcpy(cur[r], cur[de_rd_fold_peer(r, n)], sizeof(cur[r]));
	for (r = 0; r < n; r++)
		for (i = 0; i < n; i++)
			if (cur[r][i] != 1)
				return 0;
	return 1;
}

static int links_pair(enum de_rd_link_kind a, enum de_rd_link_kind b)
{
	return (a == DE_LINK_RIGHT && b == DE_LINK_LEFT) || (a == DE_LINK_LEFT && b == DE_LINK_RIGHT) ||
	       (a == DE_LINK_DIAL && b == DE_LINK_ACCEPT) || (a == DE_LINK_ACCEPT && b == DE_LINK_DIAL);
}

int main(void)
{
	uint32_t n, r, q, bad_n = 0, asym_n = 0, link_bad = 0, peers_bad = 0;

	is_int(de_rd_pof2(0), 0, "pof2(0) = 0");
	is_int(de_rd_pof2(1), 1, "pof2(1) = 1");
	is_int(de_rd_pof2(7), 4, "pof2(7) = 4");
	is_int(de_rd_pof2(8), 8, "pof2(8) = 8");
	is_int(de_rd_pof2(UINT32_MAX), 1u << 31, "pof2(2^32-1) = 2^31 (no overflow)");
	is_int(de_rd_steps(1), 0, "one rank: no step");
	is_int(de_rd_steps(64), 6, "64 ranks: 6 steps");
	is_int(de_rd_hops(4), 2, "4 ranks: 2 hops");
	is_int(de_rd_hops(6), 4, "6 ranks: fold, 2 steps, unfold = 4 hops");
	is_int(de_rd_hops(1), 0, "one rank: no hop");

	/* The choice: small buffers take the fewest hops in a row. */
	is_int(de_allreduce_algo(8, 1), DE_ALGO_RING, "1 rank: ring (nothing to do)");
	is_int(de_allreduce_algo(8, 2), DE_ALGO_ALLGATHER, "2 ranks, 8 B: allgather (1 hop either way, no extra link)");
	is_int(de_allreduce_algo(8, 3), DE_ALGO_ALLGATHER, "3 ranks, 8 B: allgather (2 hops against 3)");
	is_int(de_allreduce_algo(8, 4), DE_ALGO_RDOUBLE, "4 ranks, 8 B: recursive doubling (2 hops against 3)");
	is_int(de_allreduce_algo(8, 5), DE_ALGO_ALLGATHER, "5 ranks, 8 B: allgather (a tie at 4 hops)");
	is_int(de_allreduce_algo(8, 6), DE_ALGO_RDOUBLE, "6 ranks, 8 B: recursive doubling (4 hops against 5)");
	is_int(de_allreduce_algo(DE_RD_MAX_BYTES, 8), DE_ALGO_RDOUBLE, "8 ranks at recursive doubling's limit: recursive doubling");
	is_int(de_allreduce_algo(DE_RD_MAX_BYTES + 4, 8), DE_ALGO_RING, "8 ranks past it: ring");
	is_int(de_allreduce_algo(DE_RD_MAX_BYTES, 6), DE_ALGO_RDOUBLE, "6 ranks at recursive doubling's limit: recursive doubling");
	is_int(de_allreduce_algo(DE_SMALL_MAX_BYTES, 2), DE_ALGO_ALLGATHER, "2 ranks at the allgather's limit: allgather");
	is_int(de_allreduce_algo(DE_SMALL_MAX_BYTES + 4, 2), DE_ALGO_RING, "2 ranks past the allgather's limit: ring");
	is_int(de_allreduce_algo(DE_SMALL_MAX_BYTES + 4, 5), DE_ALGO_RING, "5 ranks past the allgather's limit: ring");
	ok(DE_RD_MAX_BYTES <= (1u << 20), "recursive doubling's limit fits the 1 MiB receive buffer");
	is_int(de_allreduce_algo(8, 64), DE_ALGO_RDOUBLE, "64 ranks, 8 B: recursive doubling");
	is_int(de_allreduce_algo(8, 65), DE_ALGO_RING, "65 ranks: ring (no extra connections at scale)");
	is_int(de_allreduce_algo(8, 256), DE_ALGO_RING, "256 ranks: ring");
	ok(!de_rd_used(2) && !de_rd_used(3) && !de_rd_used(5) && de_rd_used(4) && de_rd_used(64) &&
	   !de_rd_used(65) && !de_rd_used(1),
	   "extra connections exactly for the worlds that use recursive doubling");

	/* A non-power-of-two world by hand: 6 = 4 + 2 extra. */
	is_int(de_rd_role(0, 6), DE_RD_FOLDED, "6 ranks: rank 0 folds into 1");
	is_int(de_rd_role(3, 6), DE_RD_FOLD_HOST, "6 ranks: rank 3 hosts rank 2");
	is_int(de_rd_role(4, 6), DE_RD_PLAIN, "6 ranks: rank 4 is plain");
	is_int(de_rd_fold_peer(3, 6), 2, "6 ranks: rank 3's fold peer is 2");
	is_int(de_rd_partner(1, 6, 0), 3, "6 ranks, step 0: 1 <-> 3");
	is_int(de_rd_partner(1, 6, 1), 4, "6 ranks, step 1: 1 <-> 4");
	is_int(de_rd_partner(0, 6, 0), 0, "6 ranks: a folded rank has no partner");
	is_int(de_rd_partner(4, 6, 2), 4, "6 ranks: no step 2");

	for (n = 1; n <= MAXN; n++) {
		int asym = 0;

		if (!simulate(n, &asym))
			bad_n = bad_n ? bad_n : n;
		if (asym)
			asym_n = asym_n ? asym_n : n;
		for (r = 0; r < n; r++) {
			uint32_t peers[40], np = de_rd_peers(r, n, peers, 40), i, j, k;

			if (np > de_rd_steps(n) + 1)
				peers_bad = peers_bad ? peers_bad : n;
			for (i = 0; i < np; i++) {
				uint32_t back[40], nb = de_rd_peers(peers[i], n, back, 40), found = 0;

				for (j = 0; j < nb; j++)
					found |= back[j] == r;
				if (!found || peers[i] == r)
					peers_bad = peers_bad ? peers_bad : n;
			}
			/* every partner and the fold peer is among the peers */
			for (k = 0; k <= de_rd_steps(n); k++) {
				uint32_t want = k == 0 ? de_rd_fold_peer(r, n) : de_rd_partner(r, n, k - 1), found = 0;

				for (i = 0; i < np; i++)
					found |= peers[i] == want;
				if (want != r && !found)
					peers_bad = peers_bad ? peers_bad : n;
			}
			for (q = 0; q < n; q++) {
				enum de_rd_link_kind a = de_rd_link(r, n, q), b = de_rd_link(q, n, r);

				if (q == r ? a != DE_LINK_NONE : !links_pair(a, b))
					link_bad = link_bad ? link_bad : n;
			}
		}
	}
	is_int(bad_n, 0, "1..%u ranks: every rank ends with every rank's buffer added once (first bad n)", MAXN);
	is_int(asym_n, 0, "1..%u ranks: every step's partners name each other (first bad n)", MAXN);
	is_int(peers_bad, 0, "1..%u ranks: peers are mutual, at most steps+1, and cover every hop (first bad n)", MAXN);
	is_int(link_bad, 0, "1..%u ranks: both ends of every pair name one connection (first bad n)", MAXN);
	is_int(de_rd_link(0, 2, 1), DE_LINK_RIGHT, "2 ranks: rank 0 uses the link it dialled");
	is_int(de_rd_link(1, 2, 0), DE_LINK_LEFT, "2 ranks: rank 1 uses the same one (its left)");
	is_int(de_rd_link(0, 8, 7), DE_LINK_LEFT, "8 ranks: 0 reaches 7 over the ring's wrap");
	is_int(de_rd_link(0, 8, 2), DE_LINK_DIAL, "8 ranks: 0 dials 2");
	is_int(de_rd_link(4, 8, 0), DE_LINK_ACCEPT, "8 ranks: 4 accepts 0");
	is_int(de_rd_link(3, 8, 9), DE_LINK_NONE, "a rank outside the world: no link");
	return tap_done();
}
