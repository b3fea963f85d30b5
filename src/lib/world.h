/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The world as its ranks describe themselves, checked as a whole by rank
 * 0 before anyone gets the peer table: per node, LOCAL_RANK is exactly
 * 0..k-1 for the k ranks there, LOCAL_WORLD_SIZE is k, and NODE_RANK (or
 * GROUP_RANK) is one value per node, a different one on each, 0..nodes-1.
 * Single ranks cannot see any of this: on one host RANK and LOCAL_RANK
 * coincide, so code that mixes them works until the second node. */
#ifndef DISTENV_WORLD_H
#define DISTENV_WORLD_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* A value the rank did not have in its environment. */
#define DE_UNSET UINT32_MAX

struct de_rank_view {
	uint32_t node;        /* node index, 0..nodes-1 */
	uint32_t local_rank;  /* or DE_UNSET */
	uint32_t local_world; /* or DE_UNSET */
	uint32_t node_rank;   /* or DE_UNSET */
};

enum de_world_verdict {
	DE_WORLD_OK = 0,
	DE_WORLD_LOCAL_RANK, /* LOCAL_RANK / LOCAL_WORLD_SIZE wrong on a node */
	DE_WORLD_NODE_RANK,  /* NODE_RANK / GROUP_RANK wrong */
};

/* v[0..world) by rank, node_name[0..nodes) for the messages. Returns the
 * first problem found (err: the node, the ranks, the values and the likely
 * cause), or DE_WORLD_OK. */
enum de_world_verdict de_world_check(const struct de_rank_view *v, uint32_t world,
				     const char *const *node_name, uint32_t nodes,
				     struct de_err *err);

/* Rank order, a note and never a failure: torchrun gives each node one
 * contiguous block of ranks; Slurm's cyclic, plane and arbitrary
 * distributions need not. node_of_rank[0..world) in 0..nodes. Returns 1
 * when every node's ranks are one block; else 0 with the first node that
 * is not, in out: "node1 has ranks 0, 2". */
int de_world_blocks(const uint32_t *node_of_rank, uint32_t world,
		    const char *const *node_name, uint32_t nodes, char *out, size_t len);

#endif
