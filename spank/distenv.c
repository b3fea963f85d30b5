/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv SPANK plugin: options, plugstack arguments, and dispatch to the
 * file for the place we run in (srun.c: srun; stepd.c: slurmstepd).
 *
 * Every callback returns 0 or -1 and nothing else: since Slurm 25.05 any
 * non-zero value is an error (before, only negative ones). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <slurm/slurm_version.h>

#include "plugin.h"

SPANK_PLUGIN(distenv, 1);

/* Written only by slurm_spank_init and the option callbacks, before any
 * task exists; read-only afterwards (see stepd.c on concurrency). */
struct de_plugin de_plugin;

#if defined(SLURM_VERSION_NUMBER) && SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
/* 25.05+: a failed slurm_spank_init in slurmstepd fails the job instead
 * of draining the node (ESPANK_NODE_FAILURE, the default): nothing distenv
 * can get wrong is the node's fault. (Ours returns 0 there today: a bad
 * setting fails the tasks, with the reason, in task_init.) Declared in
 * spank.h as `extern int`; exported by distenv.map's slurm_spank_*.
 * ESPANK_JOB_FAILURE is an enum constant (slurm_errno.h), so the version,
 * not #ifdef, says whether it exists. */
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif

/* The Slurm release whose headers built this plugin: configure's
 * DISTENV_SLURM_VERSION ("22.05.8"), else SLURM_VERSION_STRING if a
 * slurm_version.h ever has it, else its SLURM_VERSION_NUMBER (all that the
 * 22.05, 24.11 and 26.05 headers define). */
#if defined(DISTENV_SLURM_VERSION)
#define BUILT_SLURM "%s", DISTENV_SLURM_VERSION
#elif defined(SLURM_VERSION_STRING)
#define BUILT_SLURM "%s", SLURM_VERSION_STRING
#else
#define BUILT_SLURM "%d.%02d.%d", SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER), \
	SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER)
#endif

/* The distenv version and the Slurm it was built against, at verbose
 * level (srun -v; slurmd's log file at SlurmdDebug=verbose): a build for
 * another Slurm is the first thing to rule out. Called where the process's
 * log level is already in effect: slurmstepd's init, srun's
 * local_user_init (srun applies -v only after init and init_post_opt). */
static void log_loaded(void)
{
	char built[32];

	snprintf(built, sizeof(built), BUILT_SLURM);
	slurm_verbose(DE_LOG_PREFIX "%s loaded, built against Slurm %s",
		      PACKAGE_VERSION, built);
}

/* An optional-argument option given without a value to sbatch reaches
 * the job's sruns as the literal string "(null)" (Slurm prints the NULL
 * into SLURM_SPANK__SLURM_SPANK_OPTION_*): treat it as no value. */
static const char *optval(const char *optarg)
{
	return (optarg != NULL && strcmp(optarg, "(null)") == 0) ? NULL : optarg;
}

/* A bad option value: srun/sbatch refuse it (-1); slurmstepd must never
 * fail itself, so there the tasks fail with the reason instead. */
static int opt_bad(const struct de_err *e, int remote)
{
	slurm_error(DE_LOG_PREFIX "%s", e->msg);
	if (!remote)
		return -1;
	de_plugin.bad = 1;
	de_plugin.err = *e;
	return 0;
}

/* Option callbacks may run twice in slurmstepd: each only assigns. */
static int opt_env(int val, const char *optarg, int remote)
{
	struct de_err e;

	(void)val;
	optarg = optval(optarg);
	if (optarg != NULL && strcmp(optarg, "verbose") == 0) {
		de_plugin.cfg.enabled = 1;
		de_plugin.verbose = 1;
		return 0;
	}
	if (de_config_parse_dist_env(&de_plugin.cfg, optarg, &e) == 0)
		return 0;
	return opt_bad(&e, remote);
}

static int opt_port(int val, const char *optarg, int remote)
{
	struct de_err e;

	(void)val;
	if (de_config_parse_dist_port(&de_plugin.cfg, optarg, &e) == 0)
		return 0;
	return opt_bad(&e, remote);
}

static int opt_check(int val, const char *optarg, int remote)
{
	struct de_err e;

	(void)val;
	if (de_config_parse_check(&de_plugin.cfg, "--dist-check", optval(optarg), &e) == 0)
		return 0;
	return opt_bad(&e, remote);
}

static int opt_run_id(int val, const char *optarg, int remote)
{
	(void)val;
	(void)optarg;
	(void)remote;
	de_plugin.cfg.run_id = 1;
	return 0;
}

/* Registered from slurm_spank_init: sbatch/salloc ignore a static table. */
static struct spank_option options[] = {
	{ "dist-env", "auto|off|verbose",
	  "distenv: set RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT... "
	  "in every task (auto, the default), not at all (off), or report what "
	  "was set on stderr (verbose)", 2, 0, opt_env },
	{ "dist-port", "N",
	  "distenv: MASTER_PORT for this job's steps (default: derived from job "
	  "and step id)", 1, 0, opt_port },
	{ "dist-check", "auto|socket|nccl|off",
	  "distenv: before the program, run distenv-check in every task (rendezvous, "
	  "node-to-node probe, allreduce); the task fails with a diagnosis instead "
	  "of starting the program if the ranks cannot talk", 2, 0, opt_check },
	{ "dist-run-id", NULL,
	  "distenv: also set TORCHELASTIC_RUN_ID (the job id), as torchrun does: "
	  "torch.distributed.is_torchelastic_launched() becomes true and PyTorch "
	  "Lightning uses TorchElasticEnvironment instead of SLURMEnvironment "
	  "(no auto-requeue on SIGUSR1)", 0, 0, opt_run_id },
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();
	size_t i;
	int rc;

	memset(&de_plugin, 0, sizeof(de_plugin));
	de_config_init(&de_plugin.cfg);
	if (ctx == S_CTX_REMOTE)
		log_loaded();
	if (de_config_parse_args(&de_plugin.cfg, ac, av, &de_plugin.err)) {
		slurm_error(DE_LOG_PREFIX "%s", de_plugin.err.msg);
		/* srun/sbatch/salloc refuse to run: the user sees why at once.
		 * slurmstepd must not fail (it could drain the node): the tasks
		 * fail in task_init instead, with this message. */
		if (ctx != S_CTX_REMOTE)
			return -1;
		de_plugin.bad = 1;
	}
	if (ctx == S_CTX_SLURMD || ctx == S_CTX_JOB_SCRIPT)
		return 0;
	for (i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		rc = spank_option_register(sp, &options[i]);
		if (rc != ESPANK_SUCCESS) {
			slurm_error(DE_LOG_PREFIX "registering --%s: %s",
				    options[i].name, spank_strerror(rc));
			if (ctx != S_CTX_REMOTE)
				return -1;
		}
	}
	return 0;
}

int slurm_spank_local_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_LOCAL)
		return 0;
	log_loaded();
	return de_srun_local_user_init(sp) ? -1 : 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	return de_stepd_task_init(sp) ? -1 : 0;
}
