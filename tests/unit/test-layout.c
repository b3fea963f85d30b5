/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <string.h>

#include "env.h"
#include "layout.h"
#include "port.h"
#include "tap.h"

#define arr_get de_env_get

static struct de_config cfg;
static struct de_torch_env out;
static struct de_err err;

static int run(const char **env, int64_t step, long local)
{
	struct de_layout_in in = { arr_get, env, &cfg, step, local, NULL, NULL };

	memset(&err, 0, sizeof(err));
	return de_layout_compute(&in, &out, &err);
}

/* As run(), with the host of task 0 known to the caller (distenv-exec's
 * SLURM_HOSTFILE). */
static int run_t0(const char **env, const char *host)
{
	struct de_layout_in in = { arr_get, env, &cfg, -1, -1, host, "SLURM_HOSTFILE=/x" };

	memset(&err, 0, sizeof(err));
	return de_layout_compute(&in, &out, &err);
}

#define V(name) de_torch_env_get(&out, name)

int main(void)
{
	struct de_plan plan;
	unsigned long n;
	char port[16];

	de_config_init(&cfg);

	/* 2 nodes x 2 tasks, rank 3 on node2. */
	{
		const char *env[] = { "SLURM_JOB_ID=42", "SLURM_STEP_ID=0", "SLURM_PROCID=3",
				      "SLURM_LOCALID=1", "SLURM_NODEID=1",
				      "SLURM_STEP_NUM_TASKS=4", "SLURM_STEP_NUM_NODES=2",
				      "SLURM_STEP_NODELIST=node[1-2]",
				      "SLURM_STEP_TASKS_PER_NODE=2(x2)", NULL };

		ok(run(env, -1, -1) == 0, "2x2 step computes: %s", err.msg);
		is_str(V("RANK"), "3", "RANK = SLURM_PROCID");
		is_str(V("LOCAL_RANK"), "1", "LOCAL_RANK = SLURM_LOCALID");
		is_str(V("WORLD_SIZE"), "4", "WORLD_SIZE = step tasks");
		is_str(V("LOCAL_WORLD_SIZE"), "2", "LOCAL_WORLD_SIZE from tasks per node");
		is_str(V("NODE_RANK"), "1", "NODE_RANK = SLURM_NODEID");
		is_str(V("GROUP_RANK"), "1", "GROUP_RANK = NODE_RANK");
		is_str(V("GROUP_WORLD_SIZE"), "2", "GROUP_WORLD_SIZE = nodes");
		is_str(V("MASTER_ADDR"), "node1", "MASTER_ADDR = first node for block distribution");
		snprintf(port, sizeof(port), "%u", de_port_for(42, 0, DE_PORT_MIN_DEFAULT, DE_PORT_MAX_DEFAULT));
		is_str(V("MASTER_PORT"), port, "MASTER_PORT from job 42 step 0");
		is_str(V("OMP_NUM_THREADS"), "1", "OMP_NUM_THREADS=1 with 2 tasks per node");
		ok(!out.batch, "not a batch environment");
	}
	/* The rest of torchrun's worker environment, for rank 3 of 4. */
	{
		const char *env[] = { "SLURM_JOB_ID=42", "SLURM_STEP_ID=0", "SLURM_PROCID=3",
				      "SLURM_LOCALID=1", "SLURM_NODEID=1",
				      "SLURM_STEP_NUM_TASKS=4", "SLURM_STEP_NUM_NODES=2",
				      "SLURM_STEP_NODELIST=node[1-2]",
				      "SLURM_STEP_TASKS_PER_NODE=2(x2)", NULL };
		const char *requeued[] = { "SLURM_JOB_ID=42", "SLURM_STEP_ID=0", "SLURM_PROCID=0",
					   "SLURM_LOCALID=0", "SLURM_NODEID=0",
					   "SLURM_STEP_NUM_TASKS=1", "SLURM_STEP_NUM_NODES=1",
					   "SLURM_STEP_NODELIST=node1", "SLURM_STEP_TASKS_PER_NODE=1",
					   "SLURM_RESTART_COUNT=2", NULL };
		const char *bad[] = { "SLURM_JOB_ID=42", "SLURM_STEP_ID=0", "SLURM_PROCID=0",
				      "SLURM_LOCALID=0", "SLURM_NODEID=0",
				      "SLURM_STEP_NUM_TASKS=1", "SLURM_STEP_NUM_NODES=1",
				      "SLURM_STEP_NODELIST=node1", "SLURM_STEP_TASKS_PER_NODE=1",
				      "SLURM_RESTART_COUNT=two", NULL };
		const char *user[] = { "TORCH_NCCL_ASYNC_ERROR_HANDLING=0", "ROLE_NAME=trainer", NULL };
		size_t i;
		int soft = 1, nccl_kept = 0, role_kept = 0;

		ok(run(env, -1, -1) == 0, "2x2 step computes: %s", err.msg);
		is_str(V("ROLE_RANK"), "3", "ROLE_RANK = RANK (one role)");
		is_str(V("ROLE_WORLD_SIZE"), "4", "ROLE_WORLD_SIZE = WORLD_SIZE");
		is_str(V("ROLE_NAME"), "default", "ROLE_NAME = default, torchrun's one role");
		is_str(V("TORCHELASTIC_RESTART_COUNT"), "0", "TORCHELASTIC_RESTART_COUNT = 0 on a first run");
		is_str(V("TORCHELASTIC_MAX_RESTARTS"), "0", "TORCHELASTIC_MAX_RESTARTS = 0: no agent restarts anything");
		is_str(V("TORCH_NCCL_ASYNC_ERROR_HANDLING"), "1",
		       "TORCH_NCCL_ASYNC_ERROR_HANDLING = 1: a failed collective tears the communicators down");
		ok(V("TORCHELASTIC_USE_AGENT_STORE") == NULL && V("TORCHELASTIC_RUN_ID") == NULL &&
		   V("NCCL_ASYNC_ERROR_HANDLING") == NULL && V("TORCHELASTIC_ERROR_FILE") == NULL,
		   "no agent store, no run id, not the deprecated NCCL name, no error file");
		for (i = 0; i < out.n; i++)
			if (!strncmp(out.var[i].name, "ROLE_", 5) || !strncmp(out.var[i].name, "TORCH", 5))
				soft &= out.var[i].soft;
		ok(soft, "... all soft defaults");
		de_plan_make(&out, arr_get, user, 1, &plan);
		for (i = 0; i < plan.n; i++) {
			if (!strcmp(plan.item[i].name, "TORCH_NCCL_ASYNC_ERROR_HANDLING"))
				nccl_kept = plan.item[i].action == DE_KEEP;
			if (!strcmp(plan.item[i].name, "ROLE_NAME"))
				role_kept = plan.item[i].action == DE_KEEP;
		}
		ok(nccl_kept && role_kept, "the user's TORCH_NCCL_ASYNC_ERROR_HANDLING and ROLE_NAME kept, even with force=1");
		ok(run(requeued, -1, -1) == 0, "a requeued job computes: %s", err.msg);
		is_str(V("TORCHELASTIC_RESTART_COUNT"), "2", "TORCHELASTIC_RESTART_COUNT = SLURM_RESTART_COUNT");
		ok(run(bad, -1, -1) == -1 && strstr(err.msg, "SLURM_RESTART_COUNT") && strstr(err.msg, "two"),
		   "SLURM_RESTART_COUNT=two: an error naming it (%s)", err.msg);
	}
	/* A step on a subset of the job: the step's nodelist counts. */
	{
		const char *env[] = { "SLURM_JOB_ID=42", "SLURM_STEP_ID=3", "SLURM_PROCID=0",
				      "SLURM_LOCALID=0", "SLURM_NODEID=0",
				      "SLURM_STEP_NUM_TASKS=1", "SLURM_STEP_NUM_NODES=1",
				      "SLURM_JOB_NODELIST=node[1-2]",
				      "SLURM_STEP_NODELIST=node2",
				      "SLURM_STEP_TASKS_PER_NODE=1", NULL };

		ok(run(env, -1, -1) == 0, "subset step computes");
		is_str(V("MASTER_ADDR"), "node2", "MASTER_ADDR from the step's nodelist, not the job's");
		ok(V("OMP_NUM_THREADS") == NULL, "no OMP_NUM_THREADS with one task per node");
		snprintf(port, sizeof(port), "%u", de_port_for(42, 3, DE_PORT_MIN_DEFAULT, DE_PORT_MAX_DEFAULT));
		is_str(V("MASTER_PORT"), port, "step 3 gets its own port");
	}
	/* Uneven tasks per node, and the local count from slurmstepd. */
	{
		const char *env[] = { "SLURM_JOB_ID=7", "SLURM_STEP_ID=1", "SLURM_PROCID=4",
				      "SLURM_LOCALID=0", "SLURM_NODEID=2",
				      "SLURM_STEP_NUM_TASKS=5", "SLURM_STEP_NUM_NODES=3",
				      "SLURM_STEP_NODELIST=a[01-03]",
				      "SLURM_STEP_TASKS_PER_NODE=2(x2),1", NULL };

		ok(run(env, -1, -1) == 0 && strcmp(V("LOCAL_WORLD_SIZE"), "1") == 0,
		   "2(x2),1: third node has 1 task");
		is_str(V("MASTER_ADDR"), "a01", "zero-padded first host");
		ok(run(env, -1, 3) == 0 && strcmp(V("LOCAL_WORLD_SIZE"), "3") == 0,
		   "slurmstepd's local count wins over the env");
		ok(run(env, -1, 6) == -1, "local count above the world size refused");
	}
	/* Arbitrary distribution: srun's hint wins; without it, an error. */
	{
		const char *env[] = { "SLURM_JOB_ID=9", "SLURM_STEP_ID=0", "SLURM_PROCID=1",
				      "SLURM_LOCALID=0", "SLURM_NODEID=0",
				      "SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_NUM_NODES=2",
				      "SLURM_STEP_NODELIST=node[1-2]",
				      "SLURM_STEP_TASKS_PER_NODE=1(x2)",
				      "SLURM_DISTRIBUTION=arbitrary",
				      "DISTENV_MASTER_HOST=9.0:node2", NULL };
		const char *nohint[] = { "SLURM_JOB_ID=9", "SLURM_STEP_ID=0", "SLURM_PROCID=1",
					 "SLURM_LOCALID=0", "SLURM_NODEID=0",
					 "SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_NUM_NODES=2",
					 "SLURM_STEP_NODELIST=node[1-2]",
					 "SLURM_STEP_TASKS_PER_NODE=1(x2)",
					 "SLURM_DISTRIBUTION=arbitrary",
					 "DISTENV_MASTER_HOST=9.1:node2", NULL };
		const char *badhint[] = { "SLURM_JOB_ID=9", "SLURM_STEP_ID=0", "SLURM_PROCID=1",
					  "SLURM_LOCALID=0", "SLURM_NODEID=0",
					  "SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_NUM_NODES=2",
					  "SLURM_STEP_NODELIST=node[1-2]",
					  "SLURM_STEP_TASKS_PER_NODE=1(x2)",
					  "DISTENV_MASTER_HOST=9.0:node7", NULL };

		ok(run(env, -1, -1) == 0, "arbitrary with hint computes");
		is_str(V("MASTER_ADDR"), "node2", "MASTER_ADDR from srun's layout hint");
		is_str(V("NODE_RANK"), "1", "arbitrary: node1 (SLURM_NODEID 0) swaps to NODE_RANK 1, task 0's node2 is 0");
		ok(run(nohint, -1, -1) == -1, "arbitrary, hint for another step: refused");
		ok(strstr(err.msg, "SLURM_DISTRIBUTION=arbitrary") != NULL, "error names the distribution: %s", err.msg);
		ok(run(badhint, -1, -1) == -1, "hint naming a host outside the step refused");
		ok(strstr(err.msg, "node7") != NULL, "error names the host: %s", err.msg);
	}
	/* Heterogeneous step: totals from SLURM_NTASKS/NNODES, local from stepd. */
	{
		const char *env[] = { "SLURM_JOB_ID=20", "SLURM_STEP_ID=0", "SLURM_PROCID=2",
				      "SLURM_LOCALID=1", "SLURM_NODEID=1", "SLURM_HET_SIZE=2",
				      "SLURM_NTASKS=3", "SLURM_NNODES=2",
				      "SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_NUM_NODES=1",
				      "SLURM_STEP_NODELIST=node[1-2]",
				      "SLURM_STEP_TASKS_PER_NODE=2,1",
				      "SLURM_JOB_NODELIST_HET_GROUP_0=node2",
				      "DISTENV_MASTER_HOST=20.0:node2", NULL };
		const char *nohint[] = { "SLURM_JOB_ID=20", "SLURM_STEP_ID=0", "SLURM_PROCID=2",
					 "SLURM_LOCALID=1", "SLURM_NODEID=1", "SLURM_HET_SIZE=2",
					 "SLURM_NTASKS=3", "SLURM_NNODES=2",
					 "SLURM_JOB_NODELIST_PACK_GROUP_0=node2",
					 "SLURM_STEP_NODELIST=node[1-2]", NULL };
		const char *nogroup[] = { "SLURM_JOB_ID=20", "SLURM_STEP_ID=0", "SLURM_PROCID=2",
					  "SLURM_LOCALID=1", "SLURM_NODEID=1", "SLURM_HET_SIZE=2",
					  "SLURM_NTASKS=3", "SLURM_NNODES=2",
					  "SLURM_STEP_NODELIST=node[1-2]", NULL };
		const char *disagree[] = { "SLURM_JOB_ID=20", "SLURM_STEP_ID=0", "SLURM_PROCID=0",
					   "SLURM_LOCALID=0", "SLURM_NODEID=0", "SLURM_HET_SIZE=2",
					   "SLURM_NTASKS=3", "SLURM_NNODES=3",
					   "SLURM_JOB_NODELIST_HET_GROUP_0=node[2-3]",
					   "DISTENV_MASTER_HOST=20.0:node3",
					   "SLURM_STEP_NODELIST=node[1-3]", NULL };

		ok(run(env, -1, 2) == 0, "het step computes: %s", err.msg);
		is_str(V("WORLD_SIZE"), "3", "het WORLD_SIZE spans components");
		is_str(V("RANK"), "2", "het RANK carries the component offset");
		is_str(V("LOCAL_WORLD_SIZE"), "2", "het local count from slurmstepd");
		is_str(V("MASTER_ADDR"), "node2", "het MASTER_ADDR is component 0's first task");
		ok(run(nohint, -1, 2) == 0 && strcmp(V("MASTER_ADDR"), "node2") == 0,
		   "het component without hint: component 0's first node (22.05 PACK_GROUP name)");
		ok(run(nogroup, -1, 2) == -1, "het without component 0's nodelist refused rather than guessed");
		ok(run(disagree, -1, 1) == -1 && strstr(err.msg, "rank 0 runs on node3") != NULL,
		   "het: srun's layout disagreeing with component 0's first node refused: %s", err.msg);
		ok(run(env, -1, -1) == -1 && strstr(err.msg, "SLURMD_NODENAME is not set") != NULL,
		   "het without slurmstepd's count nor SLURMD_NODENAME refused: %s", err.msg);
	}
	/* Het step without slurmstepd (distenv-exec): the local count is the
	 * entry of SLURM_STEP_TASKS_PER_NODE (sorted-node order, whole step) at
	 * SLURMD_NODENAME's index in SLURM_STEP_NODELIST; SLURM_NODEID is not
	 * that index (node2 is component 0's node 0). As observed on 22.05 for
	 * `srun -N1 -n1 -w node2 : -N1 -n2 -w node1`. */
	{
		const char *n1[] = { "SLURM_JOB_ID=20", "SLURM_STEP_ID=0", "SLURM_PROCID=2",
				     "SLURM_LOCALID=1", "SLURM_NODEID=1", "SLURM_HET_SIZE=2",
				     "SLURM_NTASKS=3", "SLURM_NNODES=2", "SLURMD_NODENAME=node1",
				     "SLURM_STEP_NUM_TASKS=3", "SLURM_STEP_NUM_NODES=2",
				     "SLURM_STEP_NODELIST=node[1-2]",
				     "SLURM_STEP_TASKS_PER_NODE=2,1",
				     "SLURM_JOB_NODELIST_PACK_GROUP_0=node2", NULL };
		const char *n2[] = { "SLURM_JOB_ID=20", "SLURM_STEP_ID=0", "SLURM_PROCID=0",
				     "SLURM_LOCALID=0", "SLURM_NODEID=0", "SLURM_HET_SIZE=2",
				     "SLURM_NTASKS=3", "SLURM_NNODES=2", "SLURMD_NODENAME=node2",
				     "SLURM_STEP_NUM_TASKS=3", "SLURM_STEP_NUM_NODES=2",
				     "SLURM_STEP_NODELIST=node[1-2]",
				     "SLURM_STEP_TASKS_PER_NODE=2,1",
				     "SLURM_JOB_NODELIST_PACK_GROUP_0=node2", NULL };
		const char *percomp[] = { "SLURM_JOB_ID=20", "SLURM_STEP_ID=0", "SLURM_PROCID=0",
					  "SLURM_LOCALID=0", "SLURM_NODEID=0", "SLURM_HET_SIZE=2",
					  "SLURM_NTASKS=3", "SLURM_NNODES=2", "SLURMD_NODENAME=node2",
					  "SLURM_STEP_NODELIST=node[1-2]",
					  "SLURM_STEP_TASKS_PER_NODE=1",
					  "SLURM_JOB_NODELIST_PACK_GROUP_0=node2", NULL };
		const char *stranger[] = { "SLURM_JOB_ID=20", "SLURM_STEP_ID=0", "SLURM_PROCID=0",
					   "SLURM_LOCALID=0", "SLURM_NODEID=0", "SLURM_HET_SIZE=2",
					   "SLURM_NTASKS=3", "SLURM_NNODES=2", "SLURMD_NODENAME=node9",
					   "SLURM_STEP_NODELIST=node[1-2]",
					   "SLURM_STEP_TASKS_PER_NODE=2,1",
					   "SLURM_JOB_NODELIST_PACK_GROUP_0=node2", NULL };

		ok(run(n1, -1, -1) == 0, "het from the env computes on node1: %s", err.msg);
		is_str(V("LOCAL_WORLD_SIZE"), "2", "het node1: 2 local tasks (entry 0 of 2,1)");
		is_str(V("NODE_RANK"), "1", "het node1: NODE_RANK = SLURM_NODEID");
		is_str(V("WORLD_SIZE"), "3", "het node1: WORLD_SIZE 3");
		is_str(V("MASTER_ADDR"), "node2", "het node1: MASTER_ADDR component 0's first node");
		is_str(V("OMP_NUM_THREADS"), "1", "het node1: OMP_NUM_THREADS=1");
		ok(run(n2, -1, -1) == 0, "het from the env computes on node2: %s", err.msg);
		is_str(V("LOCAL_WORLD_SIZE"), "1", "het node2: 1 local task (entry 1, not SLURM_NODEID's 0)");
		ok(V("OMP_NUM_THREADS") == NULL, "het node2: no OMP_NUM_THREADS");
		ok(run(n2, -1, 1) == 0 && strcmp(V("LOCAL_WORLD_SIZE"), "1") == 0,
		   "het with slurmstepd's count: unchanged");
		ok(run(percomp, -1, -1) == -1 &&
		   strstr(err.msg, "SLURM_STEP_TASKS_PER_NODE=\"1\" covers 1 nodes and 1 tasks") != NULL,
		   "het: a per-component tasks-per-node value refused: %s", err.msg);
		ok(run(stranger, -1, -1) == -1 && strstr(err.msg, "SLURMD_NODENAME=node9") != NULL,
		   "het: SLURMD_NODENAME outside the step refused: %s", err.msg);
	}
	/* The caller knows task 0's host (SLURM_HOSTFILE); srun's hint wins. */
	{
		const char *arb[] = { "SLURM_JOB_ID=9", "SLURM_STEP_ID=0", "SLURM_PROCID=1",
				      "SLURM_LOCALID=0", "SLURM_NODEID=0",
				      "SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_NUM_NODES=2",
				      "SLURM_STEP_NODELIST=node[1-2]",
				      "SLURM_STEP_TASKS_PER_NODE=1(x2)",
				      "SLURM_DISTRIBUTION=arbitrary", NULL };
		const char *hinted[] = { "SLURM_JOB_ID=9", "SLURM_STEP_ID=0", "SLURM_PROCID=1",
					 "SLURM_LOCALID=0", "SLURM_NODEID=0",
					 "SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_NUM_NODES=2",
					 "SLURM_STEP_NODELIST=node[1-2]",
					 "SLURM_STEP_TASKS_PER_NODE=1(x2)",
					 "SLURM_DISTRIBUTION=arbitrary",
					 "DISTENV_MASTER_HOST=9.0:node1", NULL };

		ok(run_t0(arb, "node2") == 0, "arbitrary with the caller's task 0 host computes: %s", err.msg);
		is_str(V("MASTER_ADDR"), "node2", "MASTER_ADDR from the caller's task 0 host");
		ok(run_t0(arb, "node7") == -1, "caller's host outside the step refused");
		is_str(err.msg, "task 0's host node7 (from SLURM_HOSTFILE=/x) is not in SLURM_STEP_NODELIST=\"node[1-2]\"",
		       "error names the host and its source");
		ok(run_t0(hinted, "node2") == 0 && strcmp(V("MASTER_ADDR"), "node1") == 0,
		   "srun's hint for this step wins over the caller's host");
	}
	/* Batch step: MASTER_* only. */
	{
		const char *env[] = { "SLURM_JOB_ID=42", "SLURMD_NODENAME=node1",
				      "SLURM_JOB_NODELIST=node[1-2]", NULL };
		const char *nonode[] = { "SLURM_JOB_ID=42", "SLURM_JOB_NODELIST=x[3-4]", NULL };

		ok(run(env, DE_STEP_BATCH, 1) == 0, "batch step computes");
		ok(out.batch && out.n == 2, "batch: two variables");
		is_str(V("MASTER_ADDR"), "node1", "batch MASTER_ADDR = this (first) node");
		ok(V("RANK") == NULL, "batch: no RANK");
		snprintf(port, sizeof(port), "%u", de_port_for(42, DE_STEP_BATCH, DE_PORT_MIN_DEFAULT, DE_PORT_MAX_DEFAULT));
		is_str(V("MASTER_PORT"), port, "batch port");
		ok(run(nonode, -1, -1) == 0 && strcmp(V("MASTER_ADDR"), "x3") == 0,
		   "no SLURM_STEP_ID = batch; falls back to first job node");
		{
			const char *empty[] = { "SLURM_JOB_ID=42", "SLURMD_NODENAME=",
						"SLURM_JOB_NODELIST=x[3-4]", NULL };

			ok(run(empty, -1, -1) == -1, "batch: empty SLURMD_NODENAME refused, not passed over");
			is_str(err.msg, "SLURMD_NODENAME is empty in the task's environment", "batch: the empty one named");
		}
	}
	/* Slurm 26.05's batch step: SLURM_STEP_ID=-5 (SLURM_BATCH_SCRIPT as int32). */
	{
		const char *env[] = { "SLURM_JOB_ID=42", "SLURM_STEP_ID=-5", "SLURMD_NODENAME=node1",
				      "SLURM_JOB_NODELIST=node[1-2]", NULL };
		const char *bad[] = { "SLURM_JOB_ID=42", "SLURM_STEP_ID=-17", "SLURM_JOB_NODELIST=n1", NULL };

		snprintf(port, sizeof(port), "%u", de_port_for(42, DE_STEP_BATCH, DE_PORT_MIN_DEFAULT, DE_PORT_MAX_DEFAULT));
		ok(run(env, -1, -1) == 0 && out.batch && strcmp(V("MASTER_PORT"), port) == 0,
		   "SLURM_STEP_ID=-5 is the batch step (26.05), with the batch step's port");
		ok(run(bad, -1, -1) == -1, "SLURM_STEP_ID=-17 refused");
		is_str(err.msg, "SLURM_STEP_ID \"-17\": expected a step number or one of Slurm's special ids (-1..-16)",
		       "the refusal names the value and the forms expected");
	}
	/* --dist-port fixes the port. */
	{
		const char *env[] = { "SLURM_JOB_ID=42", "SLURMD_NODENAME=node1", NULL };

		cfg.port = 23456;
		ok(run(env, DE_STEP_BATCH, 1) == 0 && strcmp(V("MASTER_PORT"), "23456") == 0,
		   "--dist-port value used");
		cfg.port = 0;
	}
	/* Impossible values: clear errors naming the variable. */
	{
		const char *rank_big[] = { "SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_PROCID=4",
					   "SLURM_LOCALID=0", "SLURM_NODEID=0",
					   "SLURM_STEP_NUM_TASKS=4", "SLURM_STEP_NUM_NODES=1",
					   "SLURM_STEP_NODELIST=n1", "SLURM_STEP_TASKS_PER_NODE=4", NULL };
		const char *bad_nl[] = { "SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_PROCID=0",
					 "SLURM_LOCALID=0", "SLURM_NODEID=0",
					 "SLURM_STEP_NUM_TASKS=1", "SLURM_STEP_NUM_NODES=1",
					 "SLURM_STEP_NODELIST=n[1-", "SLURM_STEP_TASKS_PER_NODE=1", NULL };
		const char *count_mismatch[] = { "SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_PROCID=0",
						 "SLURM_LOCALID=0", "SLURM_NODEID=0",
						 "SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_NUM_NODES=3",
						 "SLURM_STEP_NODELIST=n[1-2]",
						 "SLURM_STEP_TASKS_PER_NODE=1(x2)", NULL };
		const char *garbage[] = { "SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_PROCID=x",
					  NULL };
		const char *nojob[] = { "SLURM_STEP_ID=0", NULL };
		const char *local_big[] = { "SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_PROCID=0",
					    "SLURM_LOCALID=2", "SLURM_NODEID=0",
					    "SLURM_STEP_NUM_TASKS=4", "SLURM_STEP_NUM_NODES=2",
					    "SLURM_STEP_NODELIST=n[1-2]",
					    "SLURM_STEP_TASKS_PER_NODE=2(x2)", NULL };

		ok(run(rank_big, -1, -1) == -1, "PROCID >= NTASKS refused");
		is_str(err.msg, "SLURM_PROCID=4 is not below SLURM_STEP_NUM_TASKS=4", "names both variables");
		ok(run(bad_nl, -1, -1) == -1 && strstr(err.msg, "SLURM_STEP_NODELIST") != NULL,
		   "malformed nodelist refused, named: %s", err.msg);
		ok(run(count_mismatch, -1, -1) == -1, "nodelist count vs STEP_NUM_NODES mismatch refused");
		ok(run(garbage, -1, -1) == -1, "garbage PROCID refused");
		is_str(err.msg, "SLURM_PROCID \"x\": expected a whole number in 0..4294967295", "garbage named");
		ok(run(nojob, -1, -1) == -1, "missing SLURM_JOB_ID refused");
		is_str(err.msg, "SLURM_JOB_ID is not set in the task's environment", "missing job id named");
		ok(run(local_big, -1, -1) == -1, "LOCALID >= local tasks refused");
	}
	{
		/* parse.h's rule: an empty variable is "empty", never "not set",
		 * and never passed over for the next name. */
		const char *empty_rank[] = { "SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_PROCID=",
					     "SLURM_LOCALID=0", "SLURM_NODEID=0",
					     "SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_NUM_NODES=1",
					     "SLURM_STEP_NODELIST=n1", "SLURM_STEP_TASKS_PER_NODE=2", NULL };
		const char *empty_tasks[] = { "SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_PROCID=0",
					      "SLURM_LOCALID=0", "SLURM_NODEID=0", "SLURM_NTASKS=2",
					      "SLURM_STEP_NUM_TASKS=", "SLURM_STEP_NUM_NODES=1",
					      "SLURM_STEP_NODELIST=n1", "SLURM_STEP_TASKS_PER_NODE=2", NULL };
		const char *neg_nodes[] = { "SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_PROCID=0",
					    "SLURM_LOCALID=0", "SLURM_NODEID=0",
					    "SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_NUM_NODES=-3",
					    "SLURM_STEP_NODELIST=n1", "SLURM_STEP_TASKS_PER_NODE=2", NULL };

		ok(run(empty_rank, -1, -1) == -1, "empty SLURM_PROCID refused");
		is_str(err.msg, "SLURM_PROCID is empty in the task's environment", "empty named as empty, not unset");
		ok(run(empty_tasks, -1, -1) == -1, "empty SLURM_STEP_NUM_TASKS refused, not passed over for SLURM_NTASKS");
		is_str(err.msg, "SLURM_STEP_NUM_TASKS is empty in the task's environment", "the empty one named");
		ok(run(neg_nodes, -1, -1) == -1, "SLURM_STEP_NUM_NODES=-3 refused");
		is_str(err.msg, "SLURM_STEP_NUM_NODES \"-3\": expected a whole number in 1..4294967295",
		       "negative node count named with the form");
	}

	/* tasks-per-node parser */
	ok(de_tasks_per_node_at("T", "4", 0, &n, &err) == 0 && n == 4, "tpn: single");
	ok(de_tasks_per_node_at("T", "2(x3),1", 2, &n, &err) == 0 && n == 2, "tpn: inside repeat");
	ok(de_tasks_per_node_at("T", "2(x3),1", 3, &n, &err) == 0 && n == 1, "tpn: after repeat");
	ok(de_tasks_per_node_at("T", "2(x3),1", 4, &n, &err) == -1, "tpn: past the end");
	is_str(err.msg, "T=\"2(x3),1\": has 4 nodes, no entry for node 4", "tpn: past end message");
	ok(de_tasks_per_node_at("T", "2(x0)", 0, &n, &err) == -1, "tpn: x0 rejected");
	ok(de_tasks_per_node_at("T", "2(3)", 0, &n, &err) == -1, "tpn: missing x rejected");
	ok(de_tasks_per_node_at("T", "2,", 0, &n, &err) == -1, "tpn: trailing comma rejected");
	ok(de_tasks_per_node_at("T", "a", 0, &n, &err) == -1, "tpn: letters rejected");
	ok(de_tasks_per_node_at("T", "", 0, &n, &err) == -1, "tpn: empty rejected");
	ok(de_tasks_per_node_at("T", "1,2(x2", 0, &n, &err) == -1, "tpn: unclosed paren rejected even after match");
	{
		size_t nodes = 0;
		unsigned long long tasks = 0;

		ok(de_tasks_per_node_totals("T", "2(x3),1", &nodes, &tasks, &err) == 0 &&
		   nodes == 4 && tasks == 7, "tpn totals: 2(x3),1 is 4 nodes, 7 tasks");
		ok(de_tasks_per_node_totals("T", "2,1", &nodes, &tasks, &err) == 0 &&
		   nodes == 2 && tasks == 3, "tpn totals: 2,1 is 2 nodes, 3 tasks");
		ok(de_tasks_per_node_totals("T", "2(x", &nodes, &tasks, &err) == -1,
		   "tpn totals: malformed rejected");
	}

	/* The plan: set / keep / replace inherited / force. */
	{
		const char *env[] = { "SLURM_JOB_ID=42", "SLURM_STEP_ID=0", "SLURM_PROCID=0",
				      "SLURM_LOCALID=0", "SLURM_NODEID=0",
				      "SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_NUM_NODES=1",
				      "SLURM_STEP_NODELIST=node1",
				      "SLURM_STEP_TASKS_PER_NODE=2", NULL };
		const char *user[] = { "MASTER_PORT=1234", "OMP_NUM_THREADS=8",
				       "MASTER_ADDR=node9",
				       "DISTENV_MANAGED=MASTER_ADDR=node9;MASTER_PORT=4321", NULL };
		size_t i;
		int port_kept = 0, addr_replaced = 0, rank_set = 0, omp_kept = 0;

		ok(run(env, -1, -1) == 0, "plan input computes");
		de_plan_make(&out, arr_get, user, 0, &plan);
		for (i = 0; i < plan.n; i++) {
			if (!strcmp(plan.item[i].name, "MASTER_PORT"))
				port_kept = plan.item[i].action == DE_KEEP &&
					    !strcmp(plan.item[i].current, "1234");
			if (!strcmp(plan.item[i].name, "MASTER_ADDR"))
				addr_replaced = plan.item[i].action == DE_REPLACE;
			if (!strcmp(plan.item[i].name, "RANK"))
				rank_set = plan.item[i].action == DE_SET;
			if (!strcmp(plan.item[i].name, "OMP_NUM_THREADS"))
				omp_kept = plan.item[i].action == DE_KEEP;
		}
		ok(port_kept, "user's MASTER_PORT kept (differs from what an outer step set)");
		ok(addr_replaced, "MASTER_ADDR inherited from an outer step replaced");
		ok(rank_set, "absent RANK set");
		ok(omp_kept, "user's OMP_NUM_THREADS kept");
		ok(strstr(plan.managed, "RANK=0") && strstr(plan.managed, "MASTER_ADDR=node1") &&
		   !strstr(plan.managed, "MASTER_PORT"), "managed list records what was set: %s",
		   plan.managed);
		de_plan_make(&out, arr_get, user, 1, &plan);
		for (i = 0; i < plan.n; i++) {
			if (!strcmp(plan.item[i].name, "MASTER_PORT"))
				port_kept = plan.item[i].action == DE_OVERRIDE;
			if (!strcmp(plan.item[i].name, "OMP_NUM_THREADS"))
				omp_kept = plan.item[i].action == DE_KEEP;
		}
		ok(port_kept, "force=1 overrides the user's MASTER_PORT");
		ok(omp_kept, "force=1 still keeps the user's OMP_NUM_THREADS");
	}

	/* The verbose lines, one wording for the plugin and distenv-exec. */
	{
		const char *env[] = { "SLURM_JOB_ID=42", "SLURM_STEP_ID=0", "SLURM_PROCID=1",
				      "SLURM_LOCALID=1", "SLURM_NODEID=0",
				      "SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_NUM_NODES=1",
				      "SLURM_STEP_NODELIST=node1",
				      "SLURM_STEP_TASKS_PER_NODE=2", NULL };
		const char *user[] = { "MASTER_PORT=1234", "MASTER_ADDR=node9",
				       "DISTENV_MANAGED=MASTER_ADDR=node9", NULL };
		char line[DE_PLAN_LINE_MAX], small[12], want[64];
		const char *mp;
		size_t i, rank = 0, mport = 0, maddr = 0;

		ok(run(env, -1, -1) == 0, "verbose-line input computes");
		mp = V("MASTER_PORT");
		de_plan_make(&out, arr_get, user, 0, &plan);
		for (i = 0; i < plan.n; i++) {
			if (!strcmp(plan.item[i].name, "RANK"))
				rank = i;
			if (!strcmp(plan.item[i].name, "MASTER_PORT"))
				mport = i;
			if (!strcmp(plan.item[i].name, "MASTER_ADDR"))
				maddr = i;
		}
		de_plan_line(&plan, rank, line, sizeof(line));
		is_str(line, "RANK=1 (set)", "verbose line: set");
		de_plan_line(&plan, maddr, line, sizeof(line));
		is_str(line, "MASTER_ADDR=node1 (replaced inherited)", "verbose line: replaced inherited");
		de_plan_line(&plan, mport, line, sizeof(line));
		snprintf(want, sizeof(want), "MASTER_PORT=1234 (kept user's, distenv: %s)", mp);
		is_str(line, want, "verbose line: kept shows the user's value, then distenv's");
		de_plan_log_line(&plan, rank, line, sizeof(line));
		is_str(line, "RANK=1 set", "log line: set");
		de_plan_log_line(&plan, mport, line, sizeof(line));
		snprintf(want, sizeof(want), "MASTER_PORT=1234 kept (user's; distenv would set %s)", mp);
		is_str(line, want, "log line: kept");
		de_plan_make(&out, arr_get, user, 1, &plan);
		de_plan_line(&plan, mport, line, sizeof(line));
		snprintf(want, sizeof(want), "MASTER_PORT=%s (overrode user's (force=1))", mp);
		is_str(line, want, "verbose line: force=1 overrides");
		de_plan_line(&plan, mport, small, sizeof(small));
		is_str(small, "MASTER_PORT", "a short buffer cuts the line, terminated");
	}
	return tap_done();
}
