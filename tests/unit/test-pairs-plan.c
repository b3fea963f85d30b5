/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pairs_plan.h"
#include "tap.h"

/* Every property of the tournament for n nodes: each pair exactly once,
 * each node at most once per round, partner symmetric, round list agrees
 * with the partner function. Returns a description of the first breach. */
static const char *tournament_breach(uint32_t n)
{
	size_t np = de_pairs_count(n), got = 0, k, i;
	uint8_t *seen = calloc(np ? np : 1, 1), *busy = calloc(n, 1);
	struct de_pair_ij *pr = malloc((n / 2 + 1) * sizeof(*pr));
	const char *bad = NULL;
	uint32_t r, x;

	for (r = 0; r < de_pairs_rounds(n) && bad == NULL; r++) {
		memset(busy, 0, n);
		k = de_pairs_round(n, r, pr);
		if (k > n / 2)
			bad = "more than n/2 pairs in a round";
		for (i = 0; i < k && bad == NULL; i++) {
			size_t ix;

			if (pr[i].a >= pr[i].b || pr[i].b >= n) {
				bad = "pair not a < b < n";
				break;
			}
			if (busy[pr[i].a] || busy[pr[i].b])
				bad = "a node twice in one round";
			busy[pr[i].a] = busy[pr[i].b] = 1;
			ix = de_pair_index(n, pr[i].a, pr[i].b);
			if (ix >= np || seen[ix])
				bad = "a pair measured twice (or index out of range)";
			else
				seen[ix] = 1;
			got++;
		}
		for (x = 0; x < n && bad == NULL; x++) {
			uint32_t p = de_pairs_partner(n, r, x);

			if (p != DE_PAIR_NONE && de_pairs_partner(n, r, p) != x)
				bad = "partner not symmetric";
			if ((p != DE_PAIR_NONE) != busy[x])
				bad = "partner disagrees with the round list";
		}
		/* Even n: nobody sits out; odd n: exactly one. */
		if (bad == NULL && k != n / 2)
			bad = "a round is not full";
	}
	if (bad == NULL && got != np)
		bad = "not every pair measured";
	free(seen);
	free(busy);
	free(pr);
	return bad;
}

int main(void)
{
	struct de_pair_ij pr[4];
	struct de_pair_job jobs[8];
	struct de_err e;
	size_t nj, i;
	uint32_t n, rounds, idx_ok = 1;
	const char *bad = NULL;

	is_int(de_pairs_rounds(0), 0, "no nodes: no rounds");
	is_int(de_pairs_rounds(1), 0, "one node: no rounds");
	is_int(de_pairs_rounds(2), 1, "two nodes: one round");
	is_int(de_pairs_rounds(4), 3, "4 nodes: 3 rounds (n-1)");
	is_int(de_pairs_rounds(5), 5, "5 nodes: 5 rounds (n)");
	is_int(de_pairs_rounds(6), 5, "6 nodes: 5 rounds");
	is_int(de_pairs_rounds(256), 255, "256 nodes: 255 rounds");
	is_int((long long)de_pairs_count(6), 15, "6 nodes: 15 pairs");
	for (n = 2; n <= 300 && bad == NULL; n++)
		bad = tournament_breach(n);
	ok(bad == NULL, "n = 2..300: every pair exactly once, each node at most once per round, full rounds%s%s",
	   bad ? ": " : "", bad ? bad : "");
	ok(tournament_breach(1000) == NULL, "n = 1000: the same");
	is_int(de_pairs_partner(4, 3, 0), (long long)DE_PAIR_NONE, "round past the last: no partner");
	is_int(de_pairs_partner(4, 0, 4), (long long)DE_PAIR_NONE, "node out of range: no partner");
	is_int((long long)de_pairs_round(2, 0, pr), 1, "two nodes: one pair");
	ok(pr[0].a == 0 && pr[0].b == 1, "... 0-1");
	{
		/* Odd n: each node sits out exactly one round. */
		uint32_t byes[5] = { 0 }, r, x;

		for (r = 0; r < 5; r++)
			for (x = 0; x < 5; x++)
				byes[x] += de_pairs_partner(5, r, x) == DE_PAIR_NONE;
		ok(byes[0] == 1 && byes[1] == 1 && byes[2] == 1 && byes[3] == 1 && byes[4] == 1,
		   "5 nodes: each sits out exactly one round");
	}
	for (n = 2; n < 50; n++) {
		uint32_t a, b;
		size_t want = 0;

		for (a = 0; a < n; a++)
			for (b = a + 1; b < n; b++)
				if (de_pair_index(n, a, b) != want++ || de_pair_index(n, b, a) != want - 1)
					idx_ok = 0;
	}
	ok(idx_ok, "pair index: row by row, 0..n(n-1)/2-1, either order");

	{
		/* Node 2 fails with everyone (5 nodes), the others once each. */
		uint8_t suspect[5] = { 1, 1, 1, 1, 1 };
		uint32_t fails[5] = { 1, 1, 4, 1, 1 }, per_round_ok = 1, r;

		ok(de_pairs_retest_plan(5, suspect, fails, jobs, &nj, &rounds, &e) == 0, "retest plan");
		is_int((long long)nj, 5, "one retest per suspect node");
		for (i = 0; i < nj; i++)
			if (jobs[i].with == 2 || jobs[i].with == jobs[i].node)
				per_round_ok = 0;
		ok(per_round_ok, "nobody is retested against the failing node, nor itself");
		for (r = 0; r < rounds; r++) {
			uint8_t busy[5] = { 0 };

			for (i = 0; i < nj; i++) {
				if (jobs[i].round != r)
					continue;
				if (busy[jobs[i].node] || busy[jobs[i].with])
					per_round_ok = 0;
				busy[jobs[i].node] = busy[jobs[i].with] = 1;
			}
		}
		ok(per_round_ok, "retest rounds: each node at most once per round");
		ok(rounds >= 2 && rounds <= 5, "retests packed into %u rounds", rounds);
	}
	{
		/* One firewalled pair 1-3 of 4: both retested against a clean node. */
		uint8_t suspect[4] = { 0, 1, 0, 1 };
		uint32_t fails[4] = { 0, 1, 0, 1 };

		ok(de_pairs_retest_plan(4, suspect, fails, jobs, &nj, &rounds, &e) == 0 && nj == 2,
		   "firewalled pair: two retests");
		ok((jobs[0].with == 0 || jobs[0].with == 2) && (jobs[1].with == 0 || jobs[1].with == 2) &&
		   jobs[0].with != jobs[1].with && rounds == 1,
		   "... against the two clean nodes, spread, in one round");
	}
	{
		/* Arbitrary jobs, packed: a star on node 0 needs a round each,
		 * disjoint pairs share one. */
		struct de_pair_job j[5] = { { 0, 1, 9, 1 }, { 0, 2, 9, 1 }, { 3, 4, 9, 1 }, { 0, 3, 9, 1 }, { 1, 2, 9, 1 } };
		uint8_t busy[5];
		uint32_t r = de_pairs_pack(5, j, 5, busy);

		ok(r == 3 && j[0].round == 0 && j[2].round == 0 && j[1].round == 1 && j[3].round == 2 &&
		   j[4].round == 2, "pack, greedy in order: 0-1 3-4 | 0-2 | 0-3 1-2 (%u rounds)", r);
	}
	{
		/* 600 disjoint pairs: a round takes at most what one GO carries. */
		static struct de_pair_job many[600];
		static uint8_t busy[1200];
		uint32_t x, r, in0 = 0, in2 = 0;

		for (x = 0; x < 600; x++) {
			many[x].node = 2 * x;
			many[x].with = 2 * x + 1;
		}
		r = de_pairs_pack(1200, many, 600, busy);
		for (x = 0; x < 600; x++) {
			in0 += many[x].round == 0;
			in2 += many[x].round == 2;
		}
		ok(r == 3 && in0 == DE_PROTO_MAX_JOBS && in2 == 600 - 2 * DE_PROTO_MAX_JOBS,
		   "pack: 600 disjoint pairs in rounds of at most %u (%u rounds)", DE_PROTO_MAX_JOBS, r);
	}
	{
		uint8_t suspect[1] = { 1 };
		uint32_t fails[1] = { 0 };

		ok(de_pairs_retest_plan(1, suspect, fails, jobs, &nj, &rounds, &e) == 0 && nj == 0 &&
		   rounds == 0, "one node: nothing to retest against");
	}
	return tap_done();
}
