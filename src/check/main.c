/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv-check: proves the ranks of a job can talk, on the real network,
 * before training. Reads the torchrun environment (or derives it from
 * SLURM_* with the plugin's own code), meets the other ranks at
 * MASTER_ADDR:MASTER_PORT, probes every pair of nodes, runs an allreduce
 * (TCP ring or NCCL), verifies it, and prints one line per rank, or one
 * named diagnosis. Never hangs: --timeout bounds the whole run (budget.h).
 * This file is the order of things (setup, the run, teardown); the parts
 * are options.c, identity.c, preflight.c and modes.c; --node, the node
 * alone, is node.c's. */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "backend.h"
#include "check.h"
#include "identity.h"
#include "modes.h"
#include "node.h"
#include "options.h"
#include "pairs.h"
#include "pairs_report.h"
#include "preflight.h"
#include "rendezvous.h"
#include "report.h"
#include "socket.h"

/* --json-summary: rank 0 only. A process that could not read its RANK
 * writes none: it cannot know it is rank 0, and every rank of a broken
 * launch would write one. A summary that cannot be written fails the
 * run (CI would read none): -1 with e. */
static int write_summary(const struct de_check *c, const struct de_fail *f, size_t count,
			 int64_t t0, struct de_err *e)
{
	if (c->o.summary == NULL || !c->id.have_rank || c->id.rank != 0)
		return 0;
	return de_report_summary(c, c->o.summary, f, count, (double)(de_now_ms() - t0), e);
}

/* Rank 0, before the rendezvous: the files it is asked to write can be
 * written, and gnuplot is there, or the run stops now (a usage error,
 * exit status 2) rather than after the check. */
static int outputs_ready(struct de_check *c, struct de_fail *f)
{
	struct de_err e;

	if (c->id.rank != 0)
		return 0;
	if (c->o.summary != NULL && de_report_summary_ready(c->o.summary, &e)) {
		c->o.summary = NULL; /* nothing to write the verdict to */
		return de_fail_set(f, DE_D_USAGE, "%s", e.msg);
	}
	if (c->o.pairs && c->o.pairs_out != NULL && de_pairs_out_ready(c, &e))
		return de_fail_set(f, DE_D_USAGE, "%s", e.msg);
	return 0;
}

/* Everything a rank does alone before it meets rank 0. *tell is set
 * once rank 0 can hear of a failure: we know who we are, can prove it,
 * and know where rank 0 is. */
static int setup(struct de_check *c, struct de_fail *f, int *tell)
{
	struct de_err e;

	*tell = 0;
	if (de_read_env(c, f))
		return -1;
	if (de_dtype_world_ok(c->o.dtype, c->id.world, &e) < 0)
		return de_fail_set(f, DE_D_USAGE, "WORLD_SIZE=%u and --dtype=%s: %s", c->id.world,
				   de_dtype_name(c->o.dtype), e.msg);
	if (de_auth_init(&c->auth, c->id.token, c->id.rank, c->o.insecure, f))
		return -1;
	if (de_resolve(c->id.master, c->id.master_port, &c->net.master_addr, &e))
		return de_fail_set(f, DE_D_MASTER_RESOLVE, "MASTER_ADDR: %s", e.msg);
	*tell = 1;
	if (outputs_ready(c, f) || de_choose_backend(c, f) || de_preflight(c, f) || de_acceptor_start(c, f))
		return -1;
	if (c->id.rank == 0) {
		de_expect_hosts(c);
		if ((c->be->root_prepare != NULL && c->be->root_prepare(c, f)) ||
		    de_auth_session_new(&c->auth, f))
			return -1;
	}
	return 0;
}

/* A rank that failed alone says so to rank 0, so the others hear it now
 * instead of waiting out their timeout for a rank that will not come. */
static void tell_rank0(struct de_check *c, const struct de_fail *f)
{
	if (c->id.rank != 0)
		de_rdv_tell_failure(c, f);
	else
		de_rdv_server_doom(c, f); /* de_rdv_server_stop waits for it */
}

/* Rendezvous, probe, connect, collective(s): the run after the setup. */
static int run(struct de_check *c, size_t count, struct de_fail *f)
{
	static struct de_text rep;
	int64_t t;

	if ((c->id.rank == 0 && de_rdv_server_start(c, f)) || de_rdv_join(c, f))
		return -1;
	if (de_joined_checks(c, f))
		return de_rdv_report_failure(c, f);
	if (c->o.pairs)
		return de_pairs_mode(c, f);
	/* Phase 0: every pair of nodes, both directions, as NCCL/gloo will. */
	t = de_now_ms();
	if (de_probe_nodes(c, f, &rep) != 0) {
		/* The words rank 0 prints are ours, hints included. */
		rep.code = (uint16_t)f->diag;
		snprintf(rep.text, sizeof(rep.text), "%s", f->msg);
		return de_rdv_report_failure_rec(c, &rep, f);
	}
	if (de_rdv_phase_rec(c, &rep, NULL, f))
		return -1;
	c->net.probe_ms = (double)(de_now_ms() - t);
	t = de_now_ms();
	if (c->be->init(c, f))
		return de_rdv_report_failure(c, f);
	c->net.connect_ms = (double)(de_now_ms() - t);
	return c->o.bench ? de_bench_mode(c, f) : de_check_mode(c, count, f);
}

int main(int argc, char **argv)
{
	static struct de_pairs_state pairs;
	struct de_check c;
	struct de_fail f;
	struct de_err e;
	size_t count;
	int64_t t0;
	int rc = 1, tell;

	signal(SIGPIPE, SIG_IGN);
	{
		/* Rank 0 holds a connection per rank: lift the soft fd limit. */
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	t0 = de_now_ms();
	memset(&c, 0, sizeof(c));
	memset(&f, 0, sizeof(f));
	c.net.rdv_fd = c.net.data_fd = c.net.probe_fd = c.acc.left_fd = -1;
	/* First: every failure line names the node, even a broken environment's. */
	if (gethostname(c.id.host, sizeof(c.id.host)) != 0)
		snprintf(c.id.host, sizeof(c.id.host), "?");
	if (de_parse_opts(&c, argc, argv, &count, &e))
		return de_usage_error("distenv-check", "%s", e.msg);
	if (c.o.node)
		return de_node_mode(&c); /* this node alone: no rank, no peers */
	c.deadline = t0 + (int64_t)c.o.timeout_s * 1000;
	if (c.o.pairs) {
		/* The sweep runs over sockets on every node (the NCCL one is
		 * named skipped, with why). */
		c.pairs = &pairs;
		de_nccl_pairs_skip(&c);
		c.o.backend = DE_BACKEND_SOCKET;
	}
	if (setup(&c, &f, &tell)) {
		de_report_fail(&c, &f);
		/* A bad option or variable is a usage error (2); what the
		 * environment shows about the network is a failed check (1). */
		rc = f.diag == DE_D_USAGE || f.diag == DE_D_ENV || f.diag == DE_D_ENV_VALUE ||
		     f.diag == DE_D_RANK_RANGE ||
		     f.diag == DE_D_LOCAL_RANK || f.diag == DE_D_NODE_RANK ? 2 : 1;
		if (write_summary(&c, &f, count, t0, &e))
			de_log("rank 0", "%s", e.msg);
		if (tell) {
			tell_rank0(&c, &f);
			if (c.id.rank == 0)
				de_rdv_server_stop();
		}
		de_acceptor_stop(&c);
		return rc;
	}
	c.nphases = 1 + (c.o.bench ? de_count_sizes(&c) : 1);
	if (c.o.pairs)
		snprintf(c.id.params, sizeof(c.id.params), "pairs bytes=%zu threshold=%g", c.o.pair_bytes,
			 c.o.pair_threshold);
	else
		snprintf(c.id.params, sizeof(c.id.params), "%s %s count=%zu sizes=%zu:%zu*%u iters=%d warmup=%d",
		 c.o.bench ? "bench" : "check", de_dtype_name(c.o.dtype),
		 c.o.bench ? 0 : count, c.o.bench ? c.o.min_bytes : 0,
		 c.o.bench ? c.o.max_bytes : 0, c.o.bench ? c.o.factor : 0,
		 c.o.bench ? c.o.iters : 0, c.o.bench ? c.o.warmup : 0);
	rc = run(&c, count, &f);
	if (rc < 0)
		de_report_fail(&c, &f);
	rc = rc != 0;
	if (write_summary(&c, rc ? &f : NULL, count, t0, &e)) {
		/* Never a PASS whose summary is not there: the run fails. */
		if (rc == 0) {
			de_fail_set(&f, DE_D_USAGE, "%s: the check passed, but its verdict is not in the file",
				    e.msg);
			de_report_fail(&c, &f);
		} else {
			de_log("rank 0", "%s", e.msg);
		}
		rc = 1;
	} else if (rc == 0 && c.id.rank == 0 && !c.o.bench && !c.o.pairs) {
		de_report_pass(&c, count);
	}
	c.be->fini(&c);
	if (c.net.rdv_fd >= 0)
		close(c.net.rdv_fd);
	de_acceptor_stop(&c);
	if (c.id.rank == 0)
		de_rdv_server_stop();
	de_rbuf_free(&c.net.rdv_rb);
	de_peers_free(&c.peers);
	de_pairs_free(&c);
	if (c.id.expect_host) {
		uint32_t i;

		for (i = 0; i < c.id.world; i++)
			free(c.id.expect_host[i]);
		free(c.id.expect_host);
	}
	if (c.net.data_fd >= 0)
		close(c.net.data_fd);
	if (c.net.probe_fd >= 0)
		close(c.net.probe_fd);
	return rc;
}
