/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The SLURM_* view of a step -> the torchrun environment. Pure: the
 * environment is read through a callback so the plugin (spank_getenv),
 * the CLIs (getenv) and the unit tests (arrays) share this code. */
#ifndef DISTENV_LAYOUT_H
#define DISTENV_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "hostlist.h"
#include "settings.h"

typedef const char *(*de_getenv_fn)(void *ctx, const char *name);

/* srun passes the host of task 0 to the tasks in this variable as
 * "JOBID.STEPID:HOST": only srun knows the real layout (arbitrary
 * distribution, het steps), and the tasks need it without an RPC. */
#define DE_MASTER_HINT_VAR "DISTENV_MASTER_HOST"
/* Names and values the plugin set, "NAME=VALUE;...": an inner step can
 * tell values inherited from an outer step (replace them) from values the
 * user set (keep them). */
#define DE_MANAGED_VAR "DISTENV_MANAGED"

#define DE_ENV_MAX 21
#define DE_VALUE_MAX (DE_HOSTLIST_MAX_NAME + 1)
/* What the user is told beside the variables (verbose): where MASTER_PORT
 * came from, a port range in the kernel's ephemeral ports, ranks that are
 * not one block per node. */
#define DE_NOTES_MAX 3
#define DE_NOTE_LEN 400

struct de_env_var {
	const char *name;
	char value[DE_VALUE_MAX];
	int soft; /* only a default: never overwrites a user value, even with force */
};

struct de_torch_env {
	int batch; /* batch/interactive step: MASTER_* only, no ranks */
	size_t n;
	struct de_env_var var[DE_ENV_MAX];
	size_t nnotes;
	char note[DE_NOTES_MAX][DE_NOTE_LEN];
};

struct de_layout_in {
	de_getenv_fn get;
	void *ctx;
	const struct de_config *cfg;
	/* Step id from S_JOB_STEPID, or -1 to read SLURM_STEP_ID (absent
	 * there means the batch step). */
	int64_t step_id;
	/* Tasks of this step on this node (S_JOB_LOCAL_TASK_COUNT), or -1 to
	 * derive it from SLURM_STEP_TASKS_PER_NODE (in het steps at the index
	 * of SLURMD_NODENAME in SLURM_STEP_NODELIST). */
	long local_tasks;
	/* The host of task 0 when the caller knows it and srun's hint is
	 * absent (distenv-exec: SLURM_HOSTFILE's first host with arbitrary
	 * distribution), or NULL; task0_from names the source for errors. */
	const char *task0_host;
	const char *task0_from;
	/* The global ranks of this step's tasks on this node (slurmstepd's
	 * S_JOB_LOCAL_TO_GLOBAL_ID), or NULL to read SLURM_GTIDS; neither:
	 * the rank order is not judged. */
	const uint32_t *node_ranks;
	size_t n_node_ranks;
	/* The node's ephemeral ports (ip_local_port_range), or 0, 0 when
	 * unknown. */
	uint16_t eph_lo, eph_hi;
};

/* Computes the environment every torchrun worker would get. Errors name
 * the SLURM_* variable and its value. */
int de_layout_compute(const struct de_layout_in *in, struct de_torch_env *out,
		      struct de_err *err);

/* Are the n distinct ranks r one contiguous block? */
int de_ranks_contiguous(const uint32_t *r, size_t n);

/* Value for name in env, or NULL. */
const char *de_torch_env_get(const struct de_torch_env *env, const char *name);

/* SLURM_STEP_TASKS_PER_NODE-style "2(x3),1": the count for node idx. */
int de_tasks_per_node_at(const char *what, const char *spec, size_t idx,
			 unsigned long *out, struct de_err *err);

/* The same value's number of nodes and sum of tasks. */
int de_tasks_per_node_totals(const char *what, const char *spec,
			     size_t *nodes, unsigned long long *tasks,
			     struct de_err *err);

/* What to do with each variable given what is already in the environment. */
enum de_action {
	DE_SET,       /* absent: set it */
	DE_REPLACE,   /* inherited from an outer step's distenv: replace */
	DE_OVERRIDE,  /* user set it, force=1: overwrite */
	DE_KEEP,      /* user set it: keep the user's value */
};

struct de_plan {
	size_t n;
	struct {
		const char *name;
		const char *value;   /* the value distenv computed */
		int had;             /* the environment had a value */
		char current[DE_VALUE_MAX]; /* that value (truncated), for logs */
		enum de_action action;
	} item[DE_ENV_MAX];
	/* New DE_MANAGED_VAR value: what we set. */
	char managed[DE_ENV_MAX * (DE_VALUE_MAX + 24)];
};

void de_plan_make(const struct de_torch_env *want, de_getenv_fn get, void *ctx,
		  int force, struct de_plan *plan);

const char *de_action_name(enum de_action a);

/* The two ways distenv reports item i of a plan, worded once for the
 * plugin and distenv-exec. de_plan_line is what the user asked to see
 * (--dist-env=verbose, distenv-exec --verbose), the value the task runs
 * with first: "RANK=0 (set)", "MASTER_PORT=12345 (kept user's, distenv:
 * 23456)". de_plan_log_line is slurmd's verbose log: "RANK=0 set",
 * "MASTER_PORT=12345 kept (user's; distenv would set 23456)". Both cut
 * long values to fit len (DE_PLAN_LINE_MAX always fits). */
#define DE_PLAN_LINE_MAX (2 * DE_VALUE_MAX + 96)
void de_plan_line(const struct de_plan *plan, size_t i, char *buf, size_t len);
void de_plan_log_line(const struct de_plan *plan, size_t i, char *buf,
		      size_t len);

#endif
