/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "world.h"

/* "0, 1, 2" (the first few) into out. */
static void list_ranks(const uint32_t *r, uint32_t n, char *out, size_t len)
{
	size_t off = 0;
	uint32_t i;

	out[0] = '\0';
	for (i = 0; i < n && off + 24 < len; i++) {
		if (i == 8 && n > 9) {
			snprintf(out + off, len - off, ", ... (%u ranks)", n);
			return;
		}
		off += (size_t)snprintf(out + off, len - off, "%s%u", i ? ", " : "", r[i]);
	}
}

/* Why LOCAL_RANK went wrong, from the pattern of values on the node. */
static const char *local_cause(const struct de_rank_view *v, const uint32_t *r, uint32_t n)
{
	uint32_t i, same = 1, is_rank = 1;

	for (i = 0; i < n; i++) {
		if (v[r[i]].local_rank != v[r[0]].local_rank)
			same = 0;
		if (v[r[i]].local_rank != r[i])
			is_rank = 0;
	}
	if (same)
		return "the same value in every task: set once (export LOCAL_RANK=... in the batch script, before srun), not per task";
	if (is_rank)
		return "LOCAL_RANK equals RANK: set from $SLURM_PROCID or $RANK instead of $SLURM_LOCALID";
	return "not the task's index on its node ($SLURM_LOCALID)";
}

static enum de_world_verdict check_node(const struct de_rank_view *v, const uint32_t *r,
					uint32_t n, const char *name, struct de_err *err)
{
	char ranks[160];
	uint32_t i, j, set = 0;

	list_ranks(r, n, ranks, sizeof(ranks));
	for (i = 0; i < n; i++)
		set += v[r[i]].local_rank != DE_UNSET;
	if (set == 0)
		return DE_WORLD_OK; /* nobody said: nothing to check */
	if (set != n) {
		for (i = 0; v[r[i]].local_rank != DE_UNSET; i++)
			;
		de_errf(err, "on %s (ranks %s) rank %u has no LOCAL_RANK while others do", name,
			ranks, r[i]);
		return DE_WORLD_LOCAL_RANK;
	}
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (v[r[i]].local_rank == v[r[j]].local_rank) {
				de_errf(err, "on %s (ranks %s) ranks %u and %u both have LOCAL_RANK=%u: %s",
					name, ranks, r[i], r[j], v[r[i]].local_rank,
					local_cause(v, r, n));
				return DE_WORLD_LOCAL_RANK;
			}
	for (i = 0; i < n; i++) {
		uint32_t lw = v[r[i]].local_world;

		if (lw != DE_UNSET && lw != n) {
			de_errf(err, "%s runs %u rank%s (%s) but rank %u says LOCAL_WORLD_SIZE=%u",
				name, n, n == 1 ? "" : "s", ranks, r[i], lw);
			return DE_WORLD_LOCAL_RANK;
		}
		if (v[r[i]].local_rank >= n) {
			de_errf(err, "on %s (ranks %s) rank %u has LOCAL_RANK=%u, outside 0..%u: %s",
				name, ranks, r[i], v[r[i]].local_rank, n - 1, local_cause(v, r, n));
			return DE_WORLD_LOCAL_RANK;
		}
	}
	return DE_WORLD_OK;
}

enum de_world_verdict de_world_check(const struct de_rank_view *v, uint32_t world,
				     const char *const *node_name, uint32_t nodes,
				     struct de_err *err)
{
	uint32_t *r = malloc(((size_t)world + 1) * sizeof(*r));
	uint32_t *first = malloc(((size_t)nodes + 1) * sizeof(*first));
	uint32_t *owner = malloc(((size_t)nodes + 1) * sizeof(*owner));
	enum de_world_verdict verdict = DE_WORLD_OK;
	uint32_t nd, i, n, set = 0;

	if (r == NULL || first == NULL || owner == NULL) {
		de_errf(err, "out of memory for a %u-rank world", world);
		verdict = DE_WORLD_LOCAL_RANK;
		goto out;
	}
	/* Per node: its ranks in rank order (O(world * nodes) worst case is
	 * avoided by one counting pass). */
	memset(first, 0, ((size_t)nodes + 1) * sizeof(*first));
	for (i = 0; i < world; i++)
		first[v[i].node + 1]++;
	for (nd = 0; nd < nodes; nd++)
		first[nd + 1] += first[nd];
	memcpy(owner, first, ((size_t)nodes + 1) * sizeof(*owner));
	for (i = 0; i < world; i++)
		r[owner[v[i].node]++] = i;
	for (nd = 0; nd < nodes && verdict == DE_WORLD_OK; nd++) {
		n = first[nd + 1] - first[nd];
		if (n > 0)
			verdict = check_node(v, r + first[nd], n, node_name[nd], err);
	}
	if (verdict != DE_WORLD_OK)
		goto out;
	/* NODE_RANK: one per node, distinct, 0..nodes-1. */
	for (i = 0; i < world; i++)
		set += v[i].node_rank != DE_UNSET;
	if (set == 0)
		goto out;
	for (nd = 0; nd < nodes; nd++)
		owner[nd] = DE_UNSET;
	for (nd = 0; nd < nodes && verdict == DE_WORLD_OK; nd++) {
		const uint32_t *nr = r + first[nd];
		uint32_t want;

		n = first[nd + 1] - first[nd];
		if (n == 0)
			continue;
		want = v[nr[0]].node_rank;
		for (i = 0; i < n; i++)
			if (v[nr[i]].node_rank != want) {
				if (v[nr[i]].node_rank == DE_UNSET || want == DE_UNSET)
					de_errf(err, "on %s rank %u has %s NODE_RANK/GROUP_RANK and rank %u %s",
						node_name[nd], nr[0], want == DE_UNSET ? "no" : "a",
						nr[i], want == DE_UNSET ? "has one" : "none");
				else
					de_errf(err, "on %s rank %u has NODE_RANK=%u but rank %u NODE_RANK=%u: one node, one value",
						node_name[nd], nr[0], want, nr[i], v[nr[i]].node_rank);
				verdict = DE_WORLD_NODE_RANK;
				break;
			}
		if (verdict != DE_WORLD_OK)
			break;
		if (want == DE_UNSET) {
			de_errf(err, "%s has no NODE_RANK/GROUP_RANK while other nodes do", node_name[nd]);
			verdict = DE_WORLD_NODE_RANK;
		} else if (want >= nodes) {
			de_errf(err, "%s (rank %u) has NODE_RANK=%u but the job has %u node%s: expected 0..%u",
				node_name[nd], nr[0], want, nodes, nodes == 1 ? "" : "s", nodes - 1);
			verdict = DE_WORLD_NODE_RANK;
		} else if (owner[want] != DE_UNSET) {
			de_errf(err, "%s and %s both have NODE_RANK=%u: each node needs its own (set per node, e.g. $SLURM_NODEID)",
				node_name[owner[want]], node_name[nd], want);
			verdict = DE_WORLD_NODE_RANK;
		} else {
			owner[want] = nd;
		}
	}
out:
	free(r);
	free(first);
	free(owner);
	return verdict;
}

int de_world_blocks(const uint32_t *node_of_rank, uint32_t world,
		    const char *const *node_name, uint32_t nodes, char *out, size_t len)
{
	uint32_t *lo = calloc((size_t)nodes + 1, sizeof(*lo));
	uint32_t *hi = calloc((size_t)nodes + 1, sizeof(*hi));
	uint32_t *cnt = calloc((size_t)nodes + 1, sizeof(*cnt));
	uint32_t *r = NULL, i, bad = nodes, n = 0;
	int blocks = 1;

	out[0] = '\0';
	if (lo == NULL || hi == NULL || cnt == NULL)
		goto out; /* a note only: say nothing */
	for (i = 0; i < world; i++) {
		uint32_t nd = node_of_rank[i];

		if (nd >= nodes)
			continue;
		if (cnt[nd]++ == 0)
			lo[nd] = i;
		hi[nd] = i; /* ranks come in order: the last is the highest */
	}
	for (i = 0; i < nodes && bad == nodes; i++)
		if (cnt[i] > 0 && hi[i] - lo[i] + 1 != cnt[i])
			bad = i;
	if (bad == nodes)
		goto out;
	blocks = 0;
	r = malloc((size_t)cnt[bad] * sizeof(*r));
	if (r != NULL) {
		char ranks[160];

		for (i = 0; i < world; i++)
			if (node_of_rank[i] == bad)
				r[n++] = i;
		list_ranks(r, n, ranks, sizeof(ranks));
		snprintf(out, len, "%s has ranks %s", node_name[bad], ranks);
	}
out:
	free(r);
	free(lo);
	free(hi);
	free(cnt);
	return blocks;
}
