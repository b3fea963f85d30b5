/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "world.h"

static const char *const names[] = { "node1", "node2", "node3", "node4" };

/* nodes x per ranks in block order, LOCAL_RANK/LOCAL_WORLD_SIZE/NODE_RANK
 * as torchrun sets them. */
static void block(struct de_rank_view *v, uint32_t nodes, uint32_t per)
{
	uint32_t r;

	for (r = 0; r < nodes * per; r++) {
		v[r].node = r / per;
		v[r].local_rank = r % per;
		v[r].local_world = per;
		v[r].node_rank = r / per;
	}
}

static enum de_world_verdict run(struct de_rank_view *v, uint32_t world, uint32_t nodes,
				 struct de_err *e)
{
	memset(e, 0, sizeof(*e));
	return de_world_check(v, world, names, nodes, e);
}

int main(void)
{
	struct de_rank_view v[16];
	struct de_err e;
	uint32_t r;

	block(v, 2, 2);
	is_int(run(v, 4, 2, &e), DE_WORLD_OK, "2 nodes x 2, torchrun's values: ok");
	for (r = 0; r < 4; r++)
		v[r].local_rank = v[r].local_world = v[r].node_rank = DE_UNSET;
	is_int(run(v, 4, 2, &e), DE_WORLD_OK, "nothing set: nothing to check");

	/* The seed's bug: two hand-launched ranks on one host, LOCAL_RANK=0 both. */
	block(v, 1, 2);
	v[1].local_rank = 0;
	is_int(run(v, 2, 1, &e), DE_WORLD_LOCAL_RANK, "two ranks with LOCAL_RANK=0 on one node");
	is_str(e.msg, "on node1 (ranks 0, 1) ranks 0 and 1 both have LOCAL_RANK=0: the same value in every task: "
	       "set once (export LOCAL_RANK=... in the batch script, before srun), not per task",
	       "names the node, the ranks, the value and the likely cause");

	/* LOCAL_RANK=$RANK on 2 nodes x 2: node2 has 2 and 3. */
	block(v, 2, 2);
	v[2].local_rank = 2;
	v[3].local_rank = 3;
	is_int(run(v, 4, 2, &e), DE_WORLD_LOCAL_RANK, "LOCAL_RANK=$RANK on 2 nodes x 2");
	is_str(e.msg, "on node2 (ranks 2, 3) rank 2 has LOCAL_RANK=2, outside 0..1: "
	       "LOCAL_RANK equals RANK: set from $SLURM_PROCID or $RANK instead of $SLURM_LOCALID",
	       "RANK used as LOCAL_RANK is named");

	block(v, 2, 2);
	v[0].local_world = v[1].local_world = 4;
	is_int(run(v, 4, 2, &e), DE_WORLD_LOCAL_RANK, "LOCAL_WORLD_SIZE above the ranks there");
	is_str(e.msg, "node1 runs 2 ranks (0, 1) but rank 0 says LOCAL_WORLD_SIZE=4",
	       "LOCAL_WORLD_SIZE error names the count");

	block(v, 2, 2);
	v[3].local_rank = DE_UNSET;
	is_int(run(v, 4, 2, &e), DE_WORLD_LOCAL_RANK, "a rank without LOCAL_RANK among ranks with one");

	/* Arbitrary distribution: node of rank r is not r/per. */
	block(v, 2, 2);
	v[1].node = 1; v[1].local_rank = 0; v[1].node_rank = 1;
	v[2].node = 0; v[2].local_rank = 1; v[2].node_rank = 0;
	v[3].local_rank = 1;
	is_int(run(v, 4, 2, &e), DE_WORLD_OK, "cyclic placement with per-node LOCAL_RANK: ok");

	/* NODE_RANK */
	block(v, 2, 2);
	v[3].node_rank = 0;
	is_int(run(v, 4, 2, &e), DE_WORLD_NODE_RANK, "two values of NODE_RANK on one node");
	is_str(e.msg, "on node2 rank 2 has NODE_RANK=1 but rank 3 NODE_RANK=0: one node, one value",
	       "NODE_RANK disagreement named");
	block(v, 2, 2);
	v[2].node_rank = v[3].node_rank = 0;
	is_int(run(v, 4, 2, &e), DE_WORLD_NODE_RANK, "two nodes with NODE_RANK=0");
	is_str(e.msg, "node1 and node2 both have NODE_RANK=0: each node needs its own (set per node, e.g. $SLURM_NODEID)",
	       "duplicate NODE_RANK names both nodes");
	block(v, 2, 2);
	v[2].node_rank = v[3].node_rank = 2;
	is_int(run(v, 4, 2, &e), DE_WORLD_NODE_RANK, "NODE_RANK past the node count");
	is_str(e.msg, "node2 (rank 2) has NODE_RANK=2 but the job has 2 nodes: expected 0..1",
	       "NODE_RANK range error");
	block(v, 2, 2);
	v[2].node_rank = v[3].node_rank = DE_UNSET;
	is_int(run(v, 4, 2, &e), DE_WORLD_NODE_RANK, "one node without NODE_RANK");

	/* Many ranks: the list is cut, the check is whole. */
	block(v, 1, 16);
	v[15].local_rank = 3;
	is_int(run(v, 16, 1, &e), DE_WORLD_LOCAL_RANK, "16 ranks, one repeat");
	is_str(e.msg, "on node1 (ranks 0, 1, 2, 3, 4, 5, 6, 7, ... (16 ranks)) ranks 3 and 15 both have LOCAL_RANK=3: "
	       "not the task's index on its node ($SLURM_LOCALID)",
	       "long rank lists are cut");
	{
		static const char *const nm[] = { "node1", "node2", "node3" };
		const uint32_t block[] = { 0, 0, 1, 1 }, cyc[] = { 0, 1, 0, 1 },
			       third[] = { 0, 0, 1, 1, 2, 1 }, odd[] = { 1, 1, 0, 0 };
		char t[200];

		ok(de_world_blocks(block, 4, nm, 2, t, sizeof(t)) == 1 && t[0] == '\0',
		   "block: one block per node, no note");
		ok(de_world_blocks(odd, 4, nm, 2, t, sizeof(t)) == 1,
		   "blocks in another node order are still blocks");
		ok(de_world_blocks(cyc, 4, nm, 2, t, sizeof(t)) == 0, "cyclic: not blocks");
		is_str(t, "node1 has ranks 0, 2", "the first node that is not, with its ranks");
		ok(de_world_blocks(third, 6, nm, 3, t, sizeof(t)) == 0, "one bad node among good ones");
		is_str(t, "node2 has ranks 2, 3, 5", "that node named");
	}
	return tap_done();
}
