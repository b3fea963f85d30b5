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

/* Recursive halving then doubling (de_rh_block) for n ranks on count
 * elements, each element a vector of per-rank counts: 0 when every rank
 * ends with every rank counted once in every element and every step's
 * blocks fit (partners split the same range into two halves that cover
 * it; after the halving the active ranks' blocks partition the buffer);
 * else a short name of what broke. */
#define RH_MAXN 40u
#define RH_MAXC 70u
static const char *simulate_rh(uint32_t n, size_t count)
{
	static uint8_t cur[RH_MAXN][RH_MAXC][RH_MAXN], nxt[RH_MAXN][RH_MAXC][RH_MAXN];
	uint32_t r, q, j, steps = de_rd_steps(n), i;
	size_t e, owner[RH_MAXC];
	struct de_seg a, b, whole;

	memset(cur, 0, sizeof(cur));
	for (r = 0; r < n; r++)
		for (e = 0; e < count; e++)
			cur[r][e][r] = 1;
	for (r = 0; r < n; r++)
		if (de_rd_role(r, n) == DE_RD_FOLD_HOST)
			for (e = 0; e < count; e++)
				for (i = 0; i < n; i++)
					cur[r][e][i] += cur[de_rd_fold_peer(r, n)][e][i];
	for (j = 0; j < steps; j++) {
		memcpy(nxt, cur, sizeof(cur));
		for (r = 0; r < n; r++) {
			if (de_rd_role(r, n) == DE_RD_FOLDED)
				continue;
			q = de_rd_partner(r, n, j);
			de_rh_block(r, n, j, count, &whole);
			de_rh_block(q, n, j, count, &a);
			if (a.off != whole.off || a.len != whole.len)
				return "partners hold different ranges";
			de_rh_block(r, n, j + 1, count, &a);
			de_rh_block(q, n, j + 1, count, &b);
			if (a.len + b.len != whole.len ||
			    !((a.off == whole.off && b.off == a.off + a.len) ||
			      (b.off == whole.off && a.off == b.off + b.len)))
				return "halves do not split the range";
			for (e = a.off; e < a.off + a.len; e++)
				for (i = 0; i < n; i++)
					nxt[r][e][i] = cur[r][e][i] + cur[q][e][i];
		}
		memcpy(cur, nxt, sizeof(cur));
	}
	for (e = 0; e < count; e++)
		owner[e] = 0;
	for (r = 0; r < n; r++) {
		de_rh_block(r, n, steps, count, &a);
		for (e = a.off; e < a.off + a.len; e++)
			owner[e]++;
	}
	for (e = 0; e < count; e++)
		if (owner[e] != 1)
			return "final blocks do not partition the buffer";
	for (j = steps; j-- > 0;) {
		memcpy(nxt, cur, sizeof(cur));
		for (r = 0; r < n; r++) {
			if (de_rd_role(r, n) == DE_RD_FOLDED)
				continue;
			q = de_rd_partner(r, n, j);
			de_rh_block(q, n, j + 1, count, &b);
			for (e = b.off; e < b.off + b.len; e++)
				memcpy(nxt[r][e], cur[q][e], sizeof(nxt[r][e]));
		}
		memcpy(cur, nxt, sizeof(cur));
	}
	for (r = 0; r < n; r++)
		if (de_rd_role(r, n) == DE_RD_FOLDED)
			memcpy(cur[r], cur[de_rd_fold_peer(r, n)], sizeof(cur[r]));
	for (r = 0; r < n; r++)
		for (e = 0; e < count; e++)
			for (i = 0; i < n; i++)
				if (cur[r][e][i] != 1)
					return "some element misses a rank or counts one twice";
	return NULL;
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
	is_int(de_allreduce_algo(8, 1, 1), DE_ALGO_RING, "1 rank: ring (nothing to do)");
	is_int(de_allreduce_algo(8, 2, 1), DE_ALGO_ALLGATHER, "2 ranks, 8 B: allgather (1 hop either way, no extra link)");
	is_int(de_allreduce_algo(8, 3, 1), DE_ALGO_ALLGATHER, "3 ranks, 8 B: allgather (2 hops against 3)");
	is_int(de_allreduce_algo(8, 4, 1), DE_ALGO_RDOUBLE, "4 ranks, 8 B: recursive doubling (2 hops against 3)");
	is_int(de_allreduce_algo(8, 5, 1), DE_ALGO_ALLGATHER, "5 ranks, 8 B: allgather (a tie at 4 hops)");
	is_int(de_allreduce_algo(8, 6, 1), DE_ALGO_RDOUBLE, "6 ranks, 8 B: recursive doubling (4 hops against 5)");
	is_int(de_allreduce_algo(DE_RD_MAX_BYTES, 8, 1), DE_ALGO_RDOUBLE, "8 ranks at recursive doubling's limit: recursive doubling");
	is_int(de_allreduce_algo(DE_RD_MAX_BYTES + 4, 8, 1), DE_ALGO_RING, "8 ranks past it: ring");
	is_int(de_allreduce_algo(DE_RD_MAX_BYTES, 6, 1), DE_ALGO_RDOUBLE, "6 ranks at recursive doubling's limit: recursive doubling");
	is_int(de_allreduce_algo(DE_SMALL_MAX_BYTES, 2, 1), DE_ALGO_ALLGATHER, "2 ranks at the allgather's limit: allgather");
	is_int(de_allreduce_algo(DE_SMALL_MAX_BYTES + 4, 2, 1), DE_ALGO_RING, "2 ranks past the allgather's limit: ring");
	is_int(de_allreduce_algo(DE_SMALL_MAX_BYTES + 4, 5, 1), DE_ALGO_RING, "5 ranks past the allgather's limit: ring");
	ok(DE_RD_MAX_BYTES <= (1u << 20), "recursive doubling's limit fits the 1 MiB receive buffer");
	is_int(de_allreduce_algo(8, 64, 1), DE_ALGO_RDOUBLE, "64 ranks, 8 B: recursive doubling");
	is_int(de_allreduce_algo(8, 65, 1), DE_ALGO_RING, "65 ranks: ring (no extra connections at scale)");
	is_int(de_allreduce_algo(8, 256, 1), DE_ALGO_RING, "256 ranks: ring");

	/* Recursive halving: power-of-two worlds with ranks in node blocks. */
	is_int(de_allreduce_algo(DE_RD_MAX_BYTES + 4, 4, 2), DE_ALGO_RHALVING, "4 ranks, 2 per node, past recursive doubling: halving");
	is_int(de_allreduce_algo(DE_RH_MAX_BYTES_2, 4, 2), DE_ALGO_RHALVING, "4 ranks, 2 per node, at its limit: halving");
	is_int(de_allreduce_algo(DE_RH_MAX_BYTES_2 + 4, 4, 2), DE_ALGO_RING, "4 ranks, 2 per node, past it: ring");
	is_int(de_allreduce_algo(DE_RH_MAX_BYTES_4, 8, 4), DE_ALGO_RHALVING, "8 ranks, 4 per node, at its limit: halving");
	is_int(de_allreduce_algo(DE_RH_MAX_BYTES_4 + 4, 8, 4), DE_ALGO_RING, "8 ranks, 4 per node, past it: ring");
	is_int(de_allreduce_algo(DE_RD_MAX_BYTES + 4, 4, 1), DE_ALGO_RING, "4 ranks, one per node: ring (nothing kept on a node)");
	is_int(de_allreduce_algo(DE_RD_MAX_BYTES + 4, 6, 2), DE_ALGO_RING, "6 ranks: ring (not a power of two)");
	is_int(de_allreduce_algo(DE_RD_MAX_BYTES + 4, 128, 4), DE_ALGO_RING, "128 ranks: ring (no extra connections at scale)");
	is_int(de_allreduce_algo(DE_RD_MAX_BYTES + 4, 2, 2), DE_ALGO_RING, "2 ranks: ring (halving is the ring there)");
	{
		static const uint32_t two[] = { 0, 0, 1, 1 }, four[] = { 0, 0, 0, 0, 1, 1, 1, 1 },
				      odd[] = { 0, 0, 0, 1, 1, 1, 1, 1 }, one[] = { 0, 1, 2, 3 },
				      mixed[] = { 0, 0, 1, 1, 2, 2, 2, 2 }, same[] = { 5, 5, 5, 5, 5, 5, 5, 5 },
				      split[] = { 0, 0, 1, 1, 0, 0, 1, 1 };

		is_int(de_rh_node_block(two, 4), 2, "4 ranks on 2 nodes in blocks: 2 per node");
		is_int(de_rh_node_block(four, 8), 4, "8 ranks on 2 nodes in blocks: 4 per node");
		is_int(de_rh_node_block(odd, 8), 1, "3 + 5 ranks: no aligned block of 2");
		is_int(de_rh_node_block(one, 4), 1, "one rank per node: 1");
		is_int(de_rh_node_block(mixed, 8), 2, "2, 2 and 4 per node: 2, the smallest");
		is_int(de_rh_node_block(split, 8), 2, "a node's ranks in two blocks: 2");
		is_int(de_rh_node_block(same, 8), 2, "8 ranks on one node: 2 (no step crosses the network)");
		is_int(de_rh_node_block(same, 2), 1, "2 ranks on one node: 1");
		is_int(de_rh_node_block(two, 1), 1, "1 rank: 1");
		is_int(de_rh_node_block(NULL, 4), 1, "no table: 1");
	}
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

	/* Recursive halving and doubling: every world up to RH_MAXN on
	 * counts below, at and above the active ranks, odd and even. */
	{
		static const size_t counts[] = { 0, 1, 2, 3, 5, 8, 13, 31, 64, 69 };
		const char *why = NULL;
		uint32_t at_n = 0;
		size_t at_c = 0, ci;
		struct de_seg g;

		for (n = 1; n <= RH_MAXN && why == NULL; n++)
			for (ci = 0; ci < sizeof(counts) / sizeof(counts[0]) && why == NULL; ci++) {
				why = simulate_rh(n, counts[ci]);
				at_n = n;
				at_c = counts[ci];
			}
		ok(why == NULL, "1..%u ranks: halving and doubling count every rank once in every element (%s at %u ranks, %zu elements)",
		   RH_MAXN, why ? why : "none broke", why ? at_n : 0, why ? at_c : 0);
		de_rh_block(0, 4, 0, 100, &g);
		ok(g.off == 0 && g.len == 100, "4 ranks: before the first step, the whole buffer");
		de_rh_block(1, 4, 1, 100, &g);
		ok(g.off == 50 && g.len == 50, "4 ranks: rank 1 keeps the upper half at step 0 (its partner is rank 0)");
		de_rh_block(2, 4, 2, 101, &g);
		ok(g.off == 25 && g.len == 25, "4 ranks, 101 elements: rank 2 ends with [25, 50)");
		de_rh_block(3, 4, 2, 101, &g);
		ok(g.off == 75 && g.len == 26, "4 ranks, 101 elements: rank 3 ends with [75, 101)");
		de_rh_block(0, 6, 1, 100, &g);
		ok(g.len == 0, "6 ranks: a folded rank holds nothing");
		de_rh_block(3, 6, 9, 100, &g);
		ok(g.off == 50 && g.len == 25, "6 ranks: rank 3 (active 1) ends with [50, 75); steps past the last change nothing");
	}
	return tap_done();
}
