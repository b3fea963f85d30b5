/* SPDX-License-Identifier: GPL-2.0-or-later */
/* State shared by the plugin's per-context files. */
#ifndef DISTENV_PLUGIN_H
#define DISTENV_PLUGIN_H

#include <slurm/spank.h>

#include "err.h"
#include "settings.h"

#define DE_LOG_PREFIX "distenv: "

struct de_plugin {
	struct de_config cfg;
	int verbose;          /* --dist-env=verbose: report to the task's stderr */
	int bad;              /* a setting was invalid: fail the tasks */
	struct de_err err;    /* the bad setting, for the tasks' stderr */
};

extern struct de_plugin de_plugin;

/* srun side (S_CTX_LOCAL): learn which host runs task 0. */
int de_srun_local_user_init(spank_t sp);
/* slurmstepd side (S_CTX_REMOTE): set each task's environment. */
int de_stepd_task_init(spank_t sp);

#endif
