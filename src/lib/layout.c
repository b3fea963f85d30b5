/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "parse.h"
#include "port.h"
#include "step.h"

#define U32MAX 0xFFFFFFFFul

static int add(struct de_torch_env *env, const char *name, int soft,
	       const char *fmt_value)
{
	struct de_env_var *v = &env->var[env->n++];

	v->name = name;
	v->soft = soft;
	snprintf(v->value, sizeof(v->value), "%s", fmt_value);
	return 0;
}

static void note(struct de_torch_env *env, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note(struct de_torch_env *env, const char *fmt, ...)
{
	va_list ap;

	if (env->nnotes == DE_NOTES_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(env->note[env->nnotes++], DE_NOTE_LEN, fmt, ap);
	va_end(ap);
}

static void add_ul(struct de_torch_env *env, const char *name, int soft,
		   unsigned long val)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lu", val);
	add(env, name, soft, buf);
}

const char *de_torch_env_get(const struct de_torch_env *env, const char *name)
{
	size_t i;

	for (i = 0; i < env->n; i++)
		if (strcmp(env->var[i].name, name) == 0)
			return env->var[i].value;
	return NULL;
}

/* Walks a "2(x3),1" value: the count for node idx (when want is non-NULL)
 * and the totals. The whole string is always parsed: a malformed value must
 * not pass because the wanted entry came early. */
static int tpn_walk(const char *what, const char *spec, size_t idx,
		    unsigned long *want, size_t *nodes, unsigned long long *tasks,
		    struct de_err *err)
{
	const char *p = spec;
	size_t node = 0;
	unsigned long long total = 0;
	int found = 0;

	if (spec == NULL || *spec == '\0')
		return de_errf(err, "%s is not set (expected e.g. \"2(x3),1\")", what);
	while (*p) {
		unsigned long count = 0, rep = 1;
		int digits = 0;

		while (*p >= '0' && *p <= '9' && digits < 10) {
			count = count * 10 + (unsigned long)(*p++ - '0');
			digits++;
		}
		if (digits == 0 || (*p >= '0' && *p <= '9'))
			goto bad;
		if (p[0] == '(' && p[1] == 'x') {
			p += 2;
			rep = 0;
			digits = 0;
			while (*p >= '0' && *p <= '9' && digits < 10) {
				rep = rep * 10 + (unsigned long)(*p++ - '0');
				digits++;
			}
			if (digits == 0 || rep == 0 || *p != ')')
				goto bad;
			p++;
		}
		if (*p == ',' && p[1] != '\0')
			p++;
		else if (*p != '\0')
			goto bad;
		if (want != NULL && !found && idx >= node && idx - node < rep) {
			*want = count;
			found = 1;
		}
		node += rep;
		total += (unsigned long long)count * rep;
	}
	if (nodes != NULL)
		*nodes = node;
	if (tasks != NULL)
		*tasks = total;
	if (found || want == NULL)
		return 0;
	return de_errf(err, "%s=\"%s\": has %zu nodes, no entry for node %zu",
		       what, spec, node, idx);
bad:
	return de_errf(err, "%s=\"%s\": malformed at position %zu (expected N or N(xM), comma-separated)",
		       what, spec, (size_t)(p - spec));
}

int de_tasks_per_node_at(const char *what, const char *spec, size_t idx,
			 unsigned long *out, struct de_err *err)
{
	return tpn_walk(what, spec, idx, out, NULL, NULL, err);
}

int de_tasks_per_node_totals(const char *what, const char *spec,
			     size_t *nodes, unsigned long long *tasks,
			     struct de_err *err)
{
	return tpn_walk(what, spec, 0, NULL, nodes, tasks, err);
}

static const char *need(const struct de_layout_in *in, const char *name,
			struct de_err *err)
{
	const char *v = in->get(in->ctx, name);

	/* parse.h's rule: empty is its own error, never "not set". */
	if (v == NULL) {
		de_errf(err, "%s is not set in the task's environment", name);
		return NULL;
	}
	if (*v == '\0') {
		de_errf(err, "%s is empty in the task's environment", name);
		return NULL;
	}
	return v;
}

static int get_ul(const struct de_layout_in *in, const char *name,
		  unsigned long min, unsigned long *out, struct de_err *err)
{
	const char *v = need(in, name, err);

	if (v == NULL)
		return -1;
	return de_env_ulong(name, v, min, U32MAX, out, err);
}

/* SLURM_STEP_ID: 0..2^32-1, or a special id printed as a negative number
 * (Slurm 26.05's batch step exports SLURM_STEP_ID=-5, SLURM_BATCH_SCRIPT
 * as int32): -1..-16 are 2^32-1..2^32-16. */
static int get_step(const struct de_layout_in *in, unsigned long *out, struct de_err *err)
{
	const char *v = need(in, "SLURM_STEP_ID", err);
	unsigned long neg;

	if (v == NULL)
		return -1;
	if (v[0] != '-')
		return de_env_ulong("SLURM_STEP_ID", v, 0, U32MAX, out, err);
	if (de_parse_ulong("SLURM_STEP_ID", v + 1, 1, 16, &neg, NULL))
		return de_errf(err, "SLURM_STEP_ID \"%s\": expected a step number or one of Slurm's special ids (-1..-16)",
			       v);
	*out = U32MAX + 1ul - neg;
	return 0;
}

/* First of several names that is set (an empty one is set: its reader
 * names it, rather than quietly reading the other). */
static const char *first_set(const struct de_layout_in *in, const char *a,
			     const char *b)
{
	return in->get(in->ctx, a) != NULL ? a : b;
}

/* The host of task 0 from srun's hint, if the hint is for this step. */
static const char *hint_host(const struct de_layout_in *in,
			     unsigned long job, unsigned long step)
{
	const char *h = in->get(in->ctx, DE_MASTER_HINT_VAR);
	char prefix[48];
	size_t n;

	if (h == NULL)
		return NULL;
	n = (size_t)snprintf(prefix, sizeof(prefix), "%lu.%lu:", job, step);
	if (strncmp(h, prefix, n) != 0 || h[n] == '\0')
		return NULL;
	return h + n;
}

/* MASTER_PORT: --dist-port, else the step's first port Slurm reserved
 * for it, else the hash of job and step ids in port_min..port_max. The
 * note says which, and warns when the port may be one the kernel hands
 * out to outgoing connections. */
static int master_port(const struct de_layout_in *in, unsigned long job,
		       unsigned long step, struct de_torch_env *out, struct de_err *err)
{
	const struct de_config *c = in->cfg;
	const char *resv = in->get(in->ctx, "SLURM_STEP_RESV_PORTS");
	uint16_t port, lo = in->eph_lo, hi = in->eph_hi;
	int eph = lo != 0 || hi != 0;

	if (c->port) {
		port = c->port;
		note(out, "MASTER_PORT %u: from --dist-port", port);
	} else if (resv != NULL && DE_STEP_HAS_RANKS(step)) {
		if (de_resv_ports_first("SLURM_STEP_RESV_PORTS", resv, &port, err))
			return -1;
		note(out, "MASTER_PORT %u: the step's first reserved port (SLURM_STEP_RESV_PORTS=%s), no other step's on these nodes",
		     port, resv);
	} else {
		port = de_port_for((uint32_t)job, (uint32_t)step, c->port_min, c->port_max);
		note(out, "MASTER_PORT %u: from the job and step ids in %u-%u; no ports reserved by Slurm for this step (MpiParams=ports=LO-HI in slurm.conf makes it collision-free)",
		     port, c->port_min, c->port_max);
		if (eph && de_port_ranges_overlap(c->port_min, c->port_max, lo, hi)) {
			note(out, "the MASTER_PORT range %u-%u overlaps this node's ephemeral ports %u-%u (net.ipv4.ip_local_port_range): an outgoing connection may hold MASTER_PORT; keep port_min..port_max outside it",
			     c->port_min, c->port_max, lo, hi);
			eph = 0;
		}
	}
	if (eph && port >= lo && port <= hi)
		note(out, "MASTER_PORT %u is inside this node's ephemeral ports %u-%u (net.ipv4.ip_local_port_range): an outgoing connection may hold it",
		     port, lo, hi);
	add_ul(out, "MASTER_PORT", 0, port);
	return 0;
}

int de_ranks_contiguous(const uint32_t *r, size_t n)
{
	uint32_t lo = UINT32_MAX, hi = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		lo = r[i] < lo ? r[i] : lo;
		hi = r[i] > hi ? r[i] : hi;
	}
	return n == 0 || (size_t)(hi - lo) + 1 == n;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* SLURM_GTIDS "0,2,3": the node's ranks, into *r (allocated). */
static int read_gtids(const char *v, uint32_t **r, size_t *n, struct de_err *err)
{
	const char *p = v;
	size_t cap = 1;

	for (p = v; *p; p++)
		cap += *p == ',';
	*r = malloc(cap * sizeof(**r));
	if (*r == NULL)
		return de_errf(err, "SLURM_GTIDS: out of memory");
	*n = 0;
	p = v;
	do {
		unsigned long x = 0;
		int digits = 0;

		while (*p >= '0' && *p <= '9' && digits < 10) {
			x = x * 10 + (unsigned long)(*p++ - '0');
			digits++;
		}
		if (digits == 0 || x > U32MAX || (*p != ',' && *p != '\0')) {
			free(*r);
			*r = NULL;
			return de_errf(err, "SLURM_GTIDS=\"%.200s\": expected the node's task ranks, comma-separated",
				       v);
		}
		(*r)[(*n)++] = (uint32_t)x;
	} while (*p++ == ',');
	return 0;
}

/* torchrun gives each node one block of ranks; Slurm's cyclic, plane and
 * arbitrary distributions need not. RANK stays SLURM_PROCID (Lightning
 * and Slurm agree on it): say what it means. */
static int rank_order(const struct de_layout_in *in, unsigned long nlocal,
		      struct de_torch_env *out, struct de_err *err)
{
	const char *dist = in->get(in->ctx, "SLURM_DISTRIBUTION");
	size_t n = in->n_node_ranks, i, off = 0;
	uint32_t *r = NULL;
	char list[160];
	int rc = 0;

	if (in->node_ranks != NULL) {
		r = malloc((n ? n : 1) * sizeof(*r));
		if (r == NULL)
			return de_errf(err, "out of memory");
		memcpy(r, in->node_ranks, n * sizeof(*r));
	} else {
		const char *g = in->get(in->ctx, "SLURM_GTIDS");

		if (g == NULL)
			return 0; /* cannot tell: no note */
		if (read_gtids(g, &r, &n, err))
			return -1;
	}
	if (n != nlocal) {
		rc = de_errf(err, "%s lists %zu ranks on this node, but it runs %lu tasks",
			     in->node_ranks != NULL ? "slurmstepd" : "SLURM_GTIDS", n, nlocal);
	} else if (!de_ranks_contiguous(r, n)) {
		qsort(r, n, sizeof(*r), cmp_u32);
		list[0] = '\0';
		for (i = 0; i < n && off + 24 < sizeof(list); i++) {
			if (i == 6 && n > 7) {
				snprintf(list + off, sizeof(list) - off, ",... (%zu ranks)", n);
				break;
			}
			off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%u",
						i ? "," : "", r[i]);
		}
		note(out, "ranks on this node are %s, not one contiguous block as under torchrun (SLURM_DISTRIBUTION=%s): groups of consecutive ranks (tensor or pipeline parallel) span nodes; srun -m block keeps each node's ranks together",
		     list, dist != NULL ? dist : "unset");
	}
	free(r);
	return rc;
}

/* Het steps without slurmstepd's count (distenv-exec, distenv-check):
 * SLURM_NODEID carries component offsets, but SLURM_STEP_TASKS_PER_NODE
 * spans the whole step in the order of SLURM_STEP_NODELIST (sorted), so
 * this node's entry is at the index of SLURMD_NODENAME in that list. The
 * value must cover exactly the step's hosts and tasks: a Slurm that gives
 * it per component is refused rather than misread. */
static int het_local_tasks(const struct de_layout_in *in, const char *nodelist,
			   size_t count, const char *wname, unsigned long world,
			   unsigned long *nlocal, struct de_err *err)
{
	const char *tname = "SLURM_STEP_TASKS_PER_NODE";
	const char *tpn = in->get(in->ctx, tname);
	const char *me = in->get(in->ctx, "SLURMD_NODENAME");
	unsigned long long tasks;
	struct de_err e2;
	size_t nodes;
	long idx;

	if (me == NULL || *me == '\0')
		return de_errf(err, "heterogeneous step: SLURMD_NODENAME is %s: cannot find this node's entry in %s (the local task count)",
			       me == NULL ? "not set" : "empty", tname);
	if (de_tasks_per_node_totals(tname, tpn, &nodes, &tasks, err))
		return -1;
	if (nodes != count || tasks != world)
		return de_errf(err, "heterogeneous step: %s=\"%s\" covers %zu nodes and %llu tasks, but SLURM_STEP_NODELIST=\"%s\" has %zu hosts and %s=%lu",
			       tname, tpn, nodes, tasks, nodelist, count, wname, world);
	idx = de_hostlist_find(nodelist, DE_HL_SUFFIX, me, &e2);
	if (idx < 0)
		return de_errf(err, "heterogeneous step: SLURMD_NODENAME=%s is not in SLURM_STEP_NODELIST=\"%s\"",
			       me, nodelist);
	return de_tasks_per_node_at(tname, tpn, (size_t)idx, nlocal, err);
}

static int batch_env(const struct de_layout_in *in, unsigned long job,
		     unsigned long step, struct de_torch_env *out,
		     struct de_err *err)
{
	const char *host = in->get(in->ctx, "SLURMD_NODENAME");
	char first[DE_VALUE_MAX];

	if (host != NULL && *host == '\0')
		return de_errf(err, "SLURMD_NODENAME is empty in the task's environment");
	if (host == NULL) {
		const char *nl = need(in, "SLURM_JOB_NODELIST", err);
		struct de_err e2;

		if (nl == NULL)
			return de_errf(err, "neither SLURMD_NODENAME nor SLURM_JOB_NODELIST is set in the batch step");
		if (de_hostlist_nth(nl, DE_HL_SUFFIX, 0, first, sizeof(first),
				    &e2))
			return de_errf(err, "SLURM_JOB_NODELIST: %s", e2.msg);
		host = first;
	}
	out->batch = 1;
	add(out, "MASTER_ADDR", 0, host);
	return master_port(in, job, step, out, err);
}

/* The rest of what torchrun gives every worker (torch's elastic agent,
 * api.py and local_elastic_agent.py), all soft defaults: one role named
 * "default" over all ranks; the attempt (a requeued batch job's
 * SLURM_RESTART_COUNT), no restarts by an agent; NCCL's async error
 * handling on, under the name torch 2.x reads without a warning (torch
 * 1.13 reads NCCL_ASYNC_ERROR_HANDLING, which 2.x calls deprecated). Never
 * TORCHELASTIC_USE_AGENT_STORE: no agent hosts a store here. */
static int torchrun_rest(const struct de_layout_in *in, unsigned long job,
			 unsigned long rank, unsigned long world, struct de_torch_env *out, struct de_err *err)
{
	const char *restarts = in->get(in->ctx, "SLURM_RESTART_COUNT");
	unsigned long n = 0;

	if (restarts != NULL && de_env_ulong("SLURM_RESTART_COUNT", restarts, 0, U32MAX, &n, err))
		return -1;
	add_ul(out, "ROLE_RANK", 1, rank);
	add_ul(out, "ROLE_WORLD_SIZE", 1, world);
	add(out, "ROLE_NAME", 1, "default");
	add_ul(out, "TORCHELASTIC_RESTART_COUNT", 1, n);
	add(out, "TORCHELASTIC_MAX_RESTARTS", 1, "0");
	add(out, "TORCH_NCCL_ASYNC_ERROR_HANDLING", 1, "1");
	/* torch 2.14's torchrun (--signals-to-handle's default): the signals
	 * an elastic agent a worker starts would forward to its children.
	 * Older torch neither sets nor reads it. */
	add(out, "TORCHELASTIC_SIGNALS_TO_HANDLE", 1, "SIGTERM,SIGINT,SIGHUP,SIGQUIT");
	/* Only on request: it makes is_torchelastic_launched() true, and
	 * Lightning then leaves its SLURMEnvironment (auto-requeue). */
	if (in->cfg->run_id)
		add_ul(out, "TORCHELASTIC_RUN_ID", 1, job);
	return 0;
}

int de_layout_compute(const struct de_layout_in *in, struct de_torch_env *out,
		      struct de_err *err)
{
	unsigned long job, step, rank, local, world, nnodes, node, nlocal;
	const char *nodelist, *master, *dist, *from;
	char first[DE_VALUE_MAX];
	int het = in->get(in->ctx, "SLURM_HET_SIZE") != NULL;
	const char *wname, *nname;
	struct de_err e2;
	size_t count;
	long idx;

	memset(out, 0, sizeof(*out));
	if (get_ul(in, "SLURM_JOB_ID", 1, &job, err))
		return -1;
	if (in->step_id >= 0) {
		step = (unsigned long)in->step_id;
	} else if (in->get(in->ctx, "SLURM_STEP_ID") != NULL) {
		if (get_step(in, &step, err))
			return -1;
	} else {
		step = DE_STEP_BATCH;
	}
	if (step == DE_STEP_BATCH || step == DE_STEP_INTERACTIVE)
		return batch_env(in, job, step, out, err);

	/* Het steps: only the plain SLURM_NTASKS/SLURM_NNODES span all
	 * components (the STEP_ ones and the spank items are per component). */
	wname = het ? "SLURM_NTASKS" : first_set(in, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS");
	nname = het ? "SLURM_NNODES" : first_set(in, "SLURM_STEP_NUM_NODES", "SLURM_NNODES");
	if (get_ul(in, "SLURM_PROCID", 0, &rank, err) ||
	    get_ul(in, "SLURM_LOCALID", 0, &local, err) ||
	    get_ul(in, "SLURM_NODEID", 0, &node, err) ||
	    get_ul(in, wname, 1, &world, err) ||
	    get_ul(in, nname, 1, &nnodes, err))
		return -1;
	nodelist = need(in, "SLURM_STEP_NODELIST", err);
	if (nodelist == NULL)
		return -1;
	if (de_hostlist_count(nodelist, DE_HL_SUFFIX, &count, &e2))
		return de_errf(err, "SLURM_STEP_NODELIST: %s", e2.msg);

	if (rank >= world)
		return de_errf(err, "SLURM_PROCID=%lu is not below %s=%lu", rank, wname, world);
	if (node >= nnodes)
		return de_errf(err, "SLURM_NODEID=%lu is not below %s=%lu", node, nname, nnodes);
	if (count != nnodes)
		return de_errf(err, "SLURM_STEP_NODELIST=\"%s\" has %zu hosts but %s=%lu",
			       nodelist, count, nname, nnodes);

	if (in->local_tasks >= 0) {
		nlocal = (unsigned long)in->local_tasks;
	} else if (het) {
		if (het_local_tasks(in, nodelist, count, wname, world, &nlocal, err))
			return -1;
	} else if (de_tasks_per_node_at("SLURM_STEP_TASKS_PER_NODE",
					in->get(in->ctx, "SLURM_STEP_TASKS_PER_NODE"),
					node, &nlocal, err)) {
		return -1;
	}
	if (nlocal == 0 || nlocal > world)
		return de_errf(err, "%lu tasks on this node is impossible for %s=%lu",
			       nlocal, wname, world);
	if (local >= nlocal)
		return de_errf(err, "SLURM_LOCALID=%lu is not below the %lu tasks on this node",
			       local, nlocal);

	master = hint_host(in, job, step);
	from = DE_MASTER_HINT_VAR;
	if (master == NULL && in->task0_host != NULL) {
		master = in->task0_host;
		from = in->task0_from != NULL ? in->task0_from : "the caller";
	}
	dist = in->get(in->ctx, "SLURM_DISTRIBUTION");
	if (het) {
		/* srun runs local_user_init once, for component 0, and the
		 * other components' environments were copied before it: only
		 * component 0 sees the hint. Every component can read where
		 * component 0 starts, so all use that; component 0 checks it
		 * against the real layout so the ranks never disagree. */
		const char *g0name = first_set(in, "SLURM_JOB_NODELIST_HET_GROUP_0",
					       "SLURM_JOB_NODELIST_PACK_GROUP_0");
		const char *g0 = in->get(in->ctx, g0name);

		if (g0 == NULL || *g0 == '\0')
			return de_errf(err, "heterogeneous step: %s is %s: cannot tell which host runs rank 0",
				       g0 == NULL ? "SLURM_JOB_NODELIST_HET_GROUP_0" : g0name,
				       g0 == NULL ? "not set" : "empty");
		if (de_hostlist_nth(g0, DE_HL_SUFFIX, 0, first, sizeof(first), &e2))
			return de_errf(err, "%s: %s", g0name, e2.msg);
		if (master != NULL && strcmp(master, first) != 0)
			return de_errf(err, "heterogeneous step: rank 0 runs on %s, not on the first node of component 0 (%s=%s), which is all the other components can see: start component 0's step on its first node, or set MASTER_ADDR=%s yourself",
				       master, g0name, g0, master);
		master = first;
		from = "component 0's nodes";
	}
	if (het) {
		/* master chosen above */
	} else if (master != NULL) {
		/* validated below */
	} else if (dist != NULL && strncmp(dist, "arbitrary", 9) == 0) {
		return de_errf(err, "SLURM_DISTRIBUTION=%s without %s: task 0 need not run on the first node (is distenv loaded by srun too?)",
			       dist, DE_MASTER_HINT_VAR);
	} else {
		/* block, cyclic, plane: task 0 is on the step's first node. */
		if (de_hostlist_nth(nodelist, DE_HL_SUFFIX, 0, first,
				    sizeof(first), &e2))
			return de_errf(err, "SLURM_STEP_NODELIST: %s", e2.msg);
		master = first;
		from = "the step's first node";
	}

	idx = de_hostlist_find(nodelist, DE_HL_SUFFIX, master, &e2);
	if (idx < 0)
		return de_errf(err, "task 0's host %s (from %s) is not in SLURM_STEP_NODELIST=\"%s\"",
			       master, from, nodelist);

	add_ul(out, "RANK", 0, rank);
	add_ul(out, "LOCAL_RANK", 0, local);
	add_ul(out, "WORLD_SIZE", 0, world);
	add_ul(out, "LOCAL_WORLD_SIZE", 0, nlocal);
	/* torchrun's node 0 hosts its store at MASTER_ADDR: the node running
	 * task 0 must be NODE_RANK 0. Slurm numbers nodes in nodelist order,
	 * so under arbitrary distribution task 0's node may be node k: swap
	 * k and 0 (het steps already number component 0's nodes first). */
	if (!het && idx > 0) {
		if (node == (unsigned long)idx)
			node = 0;
		else if (node == 0)
			node = (unsigned long)idx;
	}
	add_ul(out, "NODE_RANK", 0, node);
	add_ul(out, "GROUP_RANK", 0, node);
	add_ul(out, "GROUP_WORLD_SIZE", 0, nnodes);
	add(out, "MASTER_ADDR", 0, master);
	if (master_port(in, job, step, out, err) || rank_order(in, nlocal, out, err))
		return -1;
	/* As torchrun does: N busy-spinning OpenMP pools on one node starve
	 * each other. */
	if (nlocal > 1)
		add(out, "OMP_NUM_THREADS", 1, "1");
	return torchrun_rest(in, job, rank, world, out, err);
}

/* Does the managed list "A=x;B=y" contain exactly name=value? */
static int managed_has(const char *managed, const char *name,
		       const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);
	const char *p = managed;

	while (p != NULL && *p) {
		const char *end = strchr(p, ';');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == nl + 1 + vl && strncmp(p, name, nl) == 0 &&
		    p[nl] == '=' && strncmp(p + nl + 1, value, vl) == 0)
			return 1;
		p = end ? end + 1 : NULL;
	}
	return 0;
}

void de_plan_make(const struct de_torch_env *want, de_getenv_fn get, void *ctx,
		  int force, struct de_plan *plan)
{
	const char *managed = get(ctx, DE_MANAGED_VAR);
	size_t i, off = 0;

	memset(plan, 0, sizeof(*plan));
	for (i = 0; i < want->n; i++) {
		const struct de_env_var *v = &want->var[i];
		const char *cur = get(ctx, v->name);
		enum de_action a;

		if (cur == NULL)
			a = DE_SET;
		else if (managed != NULL && managed_has(managed, v->name, cur))
			a = DE_REPLACE;
		else if (force && !v->soft)
			a = DE_OVERRIDE;
		else
			a = DE_KEEP;
		plan->item[i].name = v->name;
		plan->item[i].value = v->value;
		plan->item[i].action = a;
		plan->item[i].had = cur != NULL;
		if (cur != NULL)
			snprintf(plan->item[i].current,
				 sizeof(plan->item[i].current), "%s", cur);
		if (a != DE_KEEP)
			off += (size_t)snprintf(plan->managed + off,
						sizeof(plan->managed) - off,
						"%s%s=%s", off ? ";" : "",
						v->name, v->value);
	}
	plan->n = want->n;
}

const char *de_action_name(enum de_action a)
{
	switch (a) {
	case DE_SET:
		return "set";
	case DE_REPLACE:
		return "replaced inherited";
	case DE_OVERRIDE:
		return "overrode user's (force=1)";
	case DE_KEEP:
		return "kept user's";
	}
	return "?";
}

void de_plan_line(const struct de_plan *plan, size_t i, char *buf, size_t len)
{
	const char *name = plan->item[i].name;

	if (plan->item[i].action == DE_KEEP)
		snprintf(buf, len, "%s=%s (%s, distenv: %s)", name,
			 plan->item[i].current, de_action_name(DE_KEEP),
			 plan->item[i].value);
	else
		snprintf(buf, len, "%s=%s (%s)", name, plan->item[i].value,
			 de_action_name(plan->item[i].action));
}

void de_plan_log_line(const struct de_plan *plan, size_t i, char *buf,
		      size_t len)
{
	const char *name = plan->item[i].name;

	if (plan->item[i].action == DE_KEEP)
		snprintf(buf, len, "%s=%s kept (user's; distenv would set %s)",
			 name, plan->item[i].current, plan->item[i].value);
	else
		snprintf(buf, len, "%s=%s %s", name, plan->item[i].value,
			 de_action_name(plan->item[i].action));
}
