/* SPDX-License-Identifier: GPL-2.0-or-later */
/* srun side: only srun knows the real step layout (arbitrary distribution
 * puts task 0 wherever the hostfile says; het steps start rank 0 in
 * component 0). Tell the tasks, through srun's exported environment, which
 * host runs task 0. One RPC per step, none per task. And hand them this
 * step's secret (secret.h), for clusters without MUNGE. */
#include "config.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>

#include "hostlist.h"
#include "layout.h"
#include "plugin.h"
#include "secret.h"

typedef slurm_step_layout_t *(*layout_get_fn)(slurm_step_id_t *);
typedef void (*layout_free_fn)(slurm_step_layout_t *);

/* Host running global task 0 in layout, into buf. */
static int task0_host(const slurm_step_layout_t *l, char *buf, size_t len,
		      struct de_err *err)
{
	uint32_t n, t;

	for (n = 0; n < l->node_cnt; n++)
		for (t = 0; t < l->tasks[n]; t++)
			if (l->tids[n][t] == 0)
				return de_hostlist_nth(l->node_list, DE_HL_SUFFIX,
						       n, buf, len, err);
	return de_errf(err, "step layout (%s) has no task 0", l->node_list);
}

/* A fresh secret for this step, in srun's exported environment (as the
 * hint). Made for every step distenv is on for, not only --dist-check:
 * distenv-check also runs as the step's program or under distenv-exec,
 * and srun cannot know whether the nodes' MUNGE works (distenv-check
 * prefers MUNGE and a user's DISTENV_SECRET; it only falls back to this).
 * Always this step's own: an outer step's must not leak into a nested one.
 * Its value is never logged. */
static int step_secret(void)
{
	char s[DE_STEP_SECRET_LEN + 1];
	struct de_err e;
	int rc;

	if (de_step_secret_new(NULL, s, &e)) {
		slurm_error(DE_LOG_PREFIX "%s", e.msg);
		return -1;
	}
	rc = setenv(DE_STEP_SECRET_VAR, s, 1);
	explicit_bzero(s, sizeof(s));
	if (rc) {
		slurm_error(DE_LOG_PREFIX "setting " DE_STEP_SECRET_VAR ": out of memory");
		return -1;
	}
	slurm_debug(DE_LOG_PREFIX "a fresh " DE_STEP_SECRET_VAR " for this step's tasks");
	return 0;
}

int de_srun_local_user_init(spank_t sp)
{
	layout_get_fn get;
	layout_free_fn release;
	slurm_step_layout_t *layout;
	slurm_step_id_t id;
	uint32_t job, step;
	char host[DE_VALUE_MAX], hint[DE_VALUE_MAX + 48];
	struct de_err e;
	int rc;

	/* A stale hint from an outer srun must not leak into this step. */
	unsetenv(DE_MASTER_HINT_VAR);
	unsetenv(DE_STEP_SECRET_VAR);
	if (de_plugin.bad)
		return 0;
	/* No secret, no step: a weaker one would let others join the job. */
	if ((de_plugin.cfg.enabled || de_plugin.cfg.check != DE_BACKEND_OFF) && step_secret())
		return -1;
	if (!de_plugin.cfg.enabled)
		return 0;
	if ((rc = spank_get_item(sp, S_JOB_ID, &job)) != ESPANK_SUCCESS ||
	    (rc = spank_get_item(sp, S_JOB_STEPID, &step)) != ESPANK_SUCCESS) {
		slurm_verbose(DE_LOG_PREFIX "no job/step id in srun: %s",
			      spank_strerror(rc));
		return 0;
	}
	/* srun always has libslurm loaded; look it up so the plugin itself
	 * never links libslurm (slurmstepd need not provide it). */
	get = (layout_get_fn)dlsym(RTLD_DEFAULT, "slurm_job_step_layout_get");
	release = (layout_free_fn)dlsym(RTLD_DEFAULT, "slurm_job_step_layout_free");
	if (get == NULL || release == NULL) {
		slurm_verbose(DE_LOG_PREFIX "slurm_job_step_layout_get not available in srun");
		return 0;
	}
	/* Every field: 26.05 added sluid (0 = look the step up by its ids),
	 * and garbage there makes the lookup fail. */
	memset(&id, 0, sizeof(id));
	id.job_id = job;
	id.step_id = step;
	id.step_het_comp = NO_VAL;
	layout = get(&id);
	if (layout == NULL) {
		slurm_verbose(DE_LOG_PREFIX "no layout for step %" PRIu32 ".%" PRIu32,
			      job, step);
		return 0;
	}
	rc = task0_host(layout, host, sizeof(host), &e);
	release(layout);
	if (rc) {
		slurm_verbose(DE_LOG_PREFIX "%s", e.msg);
		return 0;
	}
	snprintf(hint, sizeof(hint), "%" PRIu32 ".%" PRIu32 ":%s", job, step,
		 host);
	/* spank_setenv is refused here; srun exports its own environment to
	 * the tasks, so a plain setenv reaches them. */
	setenv(DE_MASTER_HINT_VAR, hint, 1);
	slurm_debug(DE_LOG_PREFIX "task 0 of step %" PRIu32 ".%" PRIu32 " runs on %s",
		    job, step, host);
	return 0;
}
