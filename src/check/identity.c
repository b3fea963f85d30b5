/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Who this rank is, read once from the environment: torchrun's variables,
 * else what the plugin would set from SLURM_* (the same layout.c), and
 * where Slurm placed every rank. Each bad value is named here, before
 * the rendezvous, as a usage error. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hostlist.h"
#include "identity.h"
#include "layout.h"
#include "parse.h"
#include "settings.h"
#include "world.h"

static const char *env_get(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

/* Every number distenv-check reads from the environment goes through
 * parse.c's de_env_ulong (empty is an error, never unset). 2^32-1 is
 * DE_UNSET in a HELLO: no rank, size or index takes it. */
static int get_u32(const char *name, uint32_t min, uint32_t *out,
		   struct de_err *err)
{
	unsigned long v;

	if (de_env_ulong(name, getenv(name), min, DE_UNSET - 1ul, &v, err))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* A string variable of distenv's or torchrun's: NULL when unset, an
 * error when set but empty. */
int de_getenv_str(const char *name, const char *expected, const char **out,
		  struct de_fail *f)
{
	struct de_err e;

	*out = getenv(name);
	if (de_env_str(name, *out, expected, &e))
		return de_fail_set(f, DE_D_ENV_VALUE, "%s", e.msg);
	return 0;
}

/* The environment: torchrun's variables where set, else what the plugin
 * would have set from SLURM_* (same code), else an error. */
int de_read_env(struct de_check *c, struct de_fail *f)
{
	static const char *const need[] = { "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT" };
	struct de_torch_env te;
	struct de_config cfg;
	struct de_layout_in in;
	struct de_err e;
	const char *v;
	unsigned long port;
	char missing[128] = "";
	size_t i;
	int have_slurm = getenv("SLURM_JOB_ID") != NULL && getenv("SLURM_PROCID") != NULL;

	for (i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (getenv(need[i]) == NULL)
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
				 "%s%s", missing[0] ? " " : "", need[i]);
	c->id.env_source = "torchrun environment";
	if (missing[0] != '\0') {
		if (!have_slurm)
			return de_fail_set(f, DE_D_ENV, "%s not set and no Slurm step to derive them from",
					   missing);
		/* Fill only what is missing, as the plugin keeps user values. */
		de_config_init(&cfg);
		memset(&in, 0, sizeof(in));
		in.get = env_get;
		in.cfg = &cfg;
		in.step_id = -1;
		in.local_tasks = -1;
		if (de_layout_compute(&in, &te, &e))
			return de_fail_set(f, DE_D_ENV, "deriving %s from SLURM_*: %s", missing, e.msg);
		if (te.batch)
			return de_fail_set(f, DE_D_ENV, "this is a batch script, not a step: run distenv-check under srun");
		for (i = 0; i < te.n; i++)
			if (getenv(te.var[i].name) == NULL)
				setenv(te.var[i].name, te.var[i].value, 1);
		c->id.env_source = "SLURM_* variables";
	}
	if (get_u32("WORLD_SIZE", 1, &c->id.world, &e) || get_u32("RANK", 0, &c->id.rank, &e))
		return de_fail_set(f, DE_D_ENV_VALUE, "%s", e.msg);
	/* From here on this process knows who it is; before, it must never
	 * act as rank 0 (rank is 0 from the memset). */
	c->id.have_rank = 1;
	if (c->id.rank >= c->id.world)
		return de_fail_set(f, DE_D_RANK_RANGE, "RANK=%u is not below WORLD_SIZE=%u",
				   c->id.rank, c->id.world);
	/* Unset, they default as for one rank per node; values that do not
	 * fit the node are rank 0's to judge, for the whole job (world.c). */
	c->id.local_rank = 0;
	c->id.local_world = 1;
	c->id.have_local_rank = getenv("LOCAL_RANK") != NULL;
	c->id.have_local_world = getenv("LOCAL_WORLD_SIZE") != NULL;
	if (c->id.have_local_rank && get_u32("LOCAL_RANK", 0, &c->id.local_rank, &e))
		return de_fail_set(f, DE_D_LOCAL_RANK, "%s", e.msg);
	if (c->id.have_local_world && get_u32("LOCAL_WORLD_SIZE", 1, &c->id.local_world, &e))
		return de_fail_set(f, DE_D_LOCAL_RANK, "%s", e.msg);
	{
		/* The socket backend's spin (socket.c); read here with the
		 * rest of the environment, so a typo is an environment error. */
		const char *sv = getenv("DISTENV_SPIN_US");
		unsigned long us = 0;

		if (sv != NULL && de_env_ulong("DISTENV_SPIN_US", sv, 0, 1000000ul, &us, &e))
			return de_fail_set(f, DE_D_ENV_VALUE, "%s (microseconds a waiting rank spins before it sleeps)",
					   e.msg);
		c->id.spin_us = sv != NULL ? (long)us : -1;
	}
	{
		const char *g = getenv("GROUP_RANK"), *n = getenv("NODE_RANK");
		uint32_t gv = 0, nv = 0;

		if ((g && get_u32("GROUP_RANK", 0, &gv, &e)) || (n && get_u32("NODE_RANK", 0, &nv, &e)))
			return de_fail_set(f, DE_D_NODE_RANK, "%s", e.msg);
		if (g && n && gv != nv)
			return de_fail_set(f, DE_D_NODE_RANK, "GROUP_RANK=%u but NODE_RANK=%u: one node, one value",
					   gv, nv);
		c->id.have_node_rank = g != NULL || n != NULL;
		c->id.node_rank = g ? gv : nv;
	}
	{
		/* The node count: torchrun's, else Slurm's; the first one set
		 * is the one read, and it must be a count. */
		static const char *const nn[] = { "GROUP_WORLD_SIZE", "SLURM_STEP_NUM_NODES", "SLURM_NNODES" };

		for (i = 0; i < sizeof(nn) / sizeof(nn[0]); i++) {
			if (getenv(nn[i]) == NULL)
				continue;
			if (get_u32(nn[i], 1, &c->id.nnodes, &e))
				return de_fail_set(f, DE_D_ENV_VALUE, "%s", e.msg);
			break;
		}
	}
	v = getenv("MASTER_ADDR");
	if (v[0] == '\0')
		return de_fail_set(f, DE_D_ENV_VALUE, "MASTER_ADDR is empty: expected a host name");
	if (strlen(v) > DE_PROTO_MAX_STR)
		return de_fail_set(f, DE_D_ENV_VALUE, "MASTER_ADDR \"%.40s...\": expected a host name of at most %d characters",
				   v, DE_PROTO_MAX_STR);
	snprintf(c->id.master, sizeof(c->id.master), "%s", v);
	if (de_env_ulong("MASTER_PORT", getenv("MASTER_PORT"), 1, 65535, &port, &e))
		return de_fail_set(f, DE_D_ENV_VALUE, "%s", e.msg);
	c->id.master_port = (uint16_t)port;
	/* distenv-simulate's pseudo-nodes share this host's name: each is its
	 * own node to the layout check and the probe, named as it names them.
	 * DISTENV_SIMULATED is their count, DISTENV_SIMULATED_NODE this one. */
	if (getenv("DISTENV_SIMULATED") != NULL) {
		uint32_t nsim, node;

		if (get_u32("DISTENV_SIMULATED", 1, &nsim, &e))
			return de_fail_set(f, DE_D_ENV_VALUE, "%s (the pseudo-nodes of distenv-simulate)", e.msg);
		c->id.simulated = 1;
		if (getenv("DISTENV_SIMULATED_NODE") != NULL) {
			if (get_u32("DISTENV_SIMULATED_NODE", 0, &node, &e))
				return de_fail_set(f, DE_D_ENV_VALUE, "%s", e.msg);
			snprintf(c->id.host, sizeof(c->id.host), "node%u", node);
		}
	}
	/* Only the ranks of this launch may join: other jobs are turned away. */
	if (de_getenv_str("DISTENV_TOKEN", "a token naming this launch, the same in every rank", &v, f))
		return -1;
	if (getenv("SLURM_JOB_ID") != NULL && have_slurm)
		snprintf(c->id.token, sizeof(c->id.token), "slurm:%s.%s", getenv("SLURM_JOB_ID"),
			 getenv("SLURM_STEP_ID") ? getenv("SLURM_STEP_ID") : "batch");
	else if (v != NULL)
		snprintf(c->id.token, sizeof(c->id.token), "token:%.100s", v);
	else
		snprintf(c->id.token, sizeof(c->id.token), "manual:%.80s:%u", c->id.master,
			 c->id.master_port);
	if (de_getenv_str("SLURM_STEP_NODELIST", "the step's nodes (a hostlist expression)", &c->id.nodelist, f))
		return -1;
	return 0;
}

/* Where Slurm placed each rank, for "never arrived (expected on X)". */
void de_expect_hosts(struct de_check *c)
{
	const char *nl = getenv("SLURM_STEP_NODELIST");
	const char *tpn = getenv("SLURM_STEP_TASKS_PER_NODE");
	const char *dist = getenv("SLURM_DISTRIBUTION");
	struct de_hostlist hl;
	struct de_err e;
	size_t node = 0;
	uint32_t r = 0;
	unsigned long cnt;

	if (nl == NULL || tpn == NULL || getenv("SLURM_HET_SIZE") != NULL ||
	    (dist != NULL && strncmp(dist, "block", 5) != 0) ||
	    de_hostlist_expand(nl, DE_HL_SUFFIX, &hl, &e))
		return;
	c->id.expect_host = calloc(c->id.world, sizeof(char *));
	for (node = 0; c->id.expect_host && node < hl.count && r < c->id.world; node++) {
		if (de_tasks_per_node_at("T", tpn, node, &cnt, &e))
			break;
		while (cnt-- > 0 && r < c->id.world)
			c->id.expect_host[r++] = strdup(hl.host[node]);
	}
	de_hostlist_free(&hl);
}
