/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "pairs_plan.h"

uint32_t de_pairs_rounds(uint32_t n)
{
	if (n < 2)
		return 0;
	return n % 2 ? n : n - 1;
}

uint32_t de_pairs_partner(uint32_t n, uint32_t r, uint32_t node)
{
	uint32_t m = n % 2 ? n + 1 : n; /* with the phantom for odd n */
	uint32_t turning = m - 1, p;

	if (n < 2 || node >= n || r >= de_pairs_rounds(n))
		return DE_PAIR_NONE;
	if (node == m - 1)
		p = r;
	else if (node == r)
		p = m - 1;
	else /* the node opposite on the circle: r+k meets r-k */
		p = (uint32_t)((2ull * r + turning - node) % turning);
	return p >= n ? DE_PAIR_NONE : p;
}

size_t de_pairs_round(uint32_t n, uint32_t r, struct de_pair_ij *out)
{
	size_t k = 0;
	uint32_t x, p;

	for (x = 0; x < n; x++) {
		p = de_pairs_partner(n, r, x);
		if (p != DE_PAIR_NONE && x < p) {
			out[k].a = x;
			out[k].b = p;
			k++;
		}
	}
	return k;
}

size_t de_pairs_count(uint32_t n)
{
	return n < 2 ? 0 : (size_t)n * (n - 1) / 2;
}

size_t de_pair_index(uint32_t n, uint32_t a, uint32_t b)
{
	uint32_t t;

	if (a > b) {
		t = a;
		a = b;
		b = t;
	}
	/* Rows 0..a-1 hold n-1, n-2, ... pairs. */
	return (size_t)a * n - (size_t)a * (a + 1) / 2 + (b - a - 1);
}

int de_pairs_retest_plan(uint32_t n, const uint8_t *suspect, const uint32_t *fails,
			 struct de_pair_job *jobs, size_t *njobs, uint32_t *rounds,
			 struct de_err *err)
{
	uint32_t *used = calloc(n ? n : 1, sizeof(*used)), x, g, best, r;
	uint8_t *busy = calloc(n ? n : 1, 1);
	size_t k = 0;

	*njobs = 0;
	*rounds = 0;
	if (used == NULL || busy == NULL) {
		free(used);
		free(busy);
		return de_errf(err, "out of memory for the retest plan of %u nodes", n);
	}
	for (x = 0; x < n; x++) {
		if (!suspect[x])
			continue;
		best = DE_PAIR_NONE;
		for (g = 0; g < n; g++) {
			if (g == x)
				continue;
			if (best == DE_PAIR_NONE || fails[g] < fails[best] ||
			    (fails[g] == fails[best] && used[g] < used[best]))
				best = g;
		}
		if (best == DE_PAIR_NONE)
			continue; /* one node: nobody to test against */
		used[best]++;
		jobs[k].node = x;
		jobs[k].with = best;
		jobs[k].remeasure = 0;
		k++;
	}
	r = de_pairs_pack(n, jobs, k, busy);
	free(used);
	free(busy);
	*njobs = k;
	*rounds = r;
	return 0;
}

uint32_t de_pairs_pack(uint32_t n, struct de_pair_job *jobs, size_t k, uint8_t *busy)
{
	size_t placed = 0, i;
	uint32_t r;

	for (i = 0; i < k; i++)
		jobs[i].round = DE_PAIR_NONE;
	/* Each round takes every job whose two nodes are still free. */
	for (r = 0; placed < k; r++) {
		uint32_t taken = 0;

		memset(busy, 0, n);
		for (i = 0; i < k && taken < DE_PROTO_MAX_JOBS; i++) {
			struct de_pair_job *j = &jobs[i];

			if (j->round != DE_PAIR_NONE || busy[j->node] || busy[j->with])
				continue;
			j->round = r;
			busy[j->node] = busy[j->with] = 1;
			placed++;
			taken++;
		}
	}
	return r;
}
