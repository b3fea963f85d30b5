/* distenv-check: proves the ranks of a job can talk, on the real network,
 * before training. Reads the torchrun environment (or derives it from
 * SLURM_* with the plugin's own code), meets the other ranks at
 * MASTER_ADDR:MASTER_PORT, probes every pair of nodes, runs an allreduce
 * (TCP ring or NCCL), verifies it, and prints one line per rank, or one
 * named diagnosis. Never hangs: every wait is bounded by --timeout. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "check.h"
#include "hostlist.h"
#include "layout.h"
#include "parse.h"
#include "settings.h"
#ifdef HAVE_NCCL
#include "nccl_backend.h"
#endif

#define DEFAULT_COUNT 262147 /* ~1 MiB of float32, not divisible by small worlds */

static const char *env_get(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: distenv-check [OPTIONS]\n"
		"Run in every rank of a job (srun --dist-check, srun distenv-check, torchrun,\n"
		"or by hand with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set) to prove the\n"
		"ranks can talk: rendezvous, node-to-node probe, allreduce, verification.\n\n"
		"  --backend=auto|socket|nccl  auto: nccl when built and a GPU is visible\n"
		"  --timeout=SECONDS           bound on every phase (default 60)\n"
		"  --count=N                   elements in the check's allreduce (default %d)\n"
		"  --dtype=float32|float64|int32|int64  (default float32)\n"
		"  --bench                     size sweep with bandwidth table (nccl-tests style)\n"
		"  --sizes=MIN:MAX             bench sizes in bytes, K/M/G suffixes (default 8:64M)\n"
		"  --iters=N                   timed iterations per size (default 20)\n"
		"  --warmup=N                  untimed iterations per size (default 5)\n"
		"  --json                      one JSON object per rank instead of the line\n"
		"  --quiet                     only failures and rank 0's verdict\n"
		"  --insecure                  no authentication (anyone may join): only with a warning\n"
		"  --help, --version\n\n"
		"Authentication: MUNGE where munged runs (every Slurm node; the socket from\n"
		"slurm.conf's AuthInfo or DISTENV_MUNGE_SOCKET), else DISTENV_SECRET or\n"
		"DISTENV_SECRET_FILE (the same secret in every rank), else --insecure.\n"
		"Environment: DISTENV_SOCKET_IFNAME (or GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME)\n"
		"picks the data interface; by default the one that routes to MASTER_ADDR.\n"
		"Exit status: 0 every rank verified, 1 the check failed, 2 usage error.\n",
		DEFAULT_COUNT);
}

static int parse_bytes(const char *what, const char *s, size_t *out,
		       struct de_err *err)
{
	char num[32];
	size_t n = strlen(s), mult = 1;
	unsigned long v;

	if (n == 0 || n >= sizeof(num))
		return de_errf(err, "%s=\"%s\": expected a byte count like 8, 4K, 64M", what, s);
	memcpy(num, s, n + 1);
	switch (num[n - 1]) {
	case 'K': case 'k': mult = 1ul << 10; num[n - 1] = '\0'; break;
	case 'M': case 'm': mult = 1ul << 20; num[n - 1] = '\0'; break;
	case 'G': case 'g': mult = 1ul << 30; num[n - 1] = '\0'; break;
	default: break;
	}
	if (de_parse_ulong(what, num, 0, (4ul << 30) / mult, &v, err))
		return -1;
	*out = v * mult;
	return 0;
}

static int parse_opts(struct de_check *c, int argc, char **argv,
		      size_t *count, struct de_err *err)
{
	static const struct option longopts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "timeout", required_argument, NULL, 't' },
		{ "count", required_argument, NULL, 'c' },
		{ "dtype", required_argument, NULL, 'd' },
		{ "bench", no_argument, NULL, 'B' },
		{ "sizes", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'i' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "insecure", no_argument, NULL, 'I' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	int ch;

	c->o.backend = DE_BACKEND_AUTO;
	c->o.timeout_s = 60;
	c->o.min_bytes = 8;
	c->o.max_bytes = 64u << 20;
	c->o.iters = 20;
	c->o.warmup = 5;
	c->o.dtype = DE_F32;
	*count = DEFAULT_COUNT;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'b':
			if (strcmp(optarg, "auto") == 0)
				c->o.backend = DE_BACKEND_AUTO;
			else if (strcmp(optarg, "socket") == 0)
				c->o.backend = DE_BACKEND_SOCKET;
			else if (strcmp(optarg, "nccl") == 0)
				c->o.backend = DE_BACKEND_NCCL;
			else
				return de_errf(err, "--backend=%s: expected auto, socket or nccl", optarg);
			break;
		case 't':
			if (de_parse_ulong("--timeout", optarg, 1, 86400, &v, err))
				return -1;
			c->o.timeout_s = (int)v;
			break;
		case 'c':
			if (de_parse_ulong("--count", optarg, 0, 1ul << 30, &v, err))
				return -1;
			*count = v;
			break;
		case 'd':
			if (de_dtype_parse(optarg, &c->o.dtype, err))
				return -1;
			break;
		case 'B':
			c->o.bench = 1;
			break;
		case 's': {
			char *colon = strchr(optarg, ':');

			if (colon == NULL)
				return de_errf(err, "--sizes=%s: expected MIN:MAX, e.g. 8:64M", optarg);
			*colon = '\0';
			if (parse_bytes("--sizes MIN", optarg, &c->o.min_bytes, err) ||
			    parse_bytes("--sizes MAX", colon + 1, &c->o.max_bytes, err))
				return -1;
			if (c->o.min_bytes > c->o.max_bytes)
				return de_errf(err, "--sizes: MIN %zu is above MAX %zu",
					       c->o.min_bytes, c->o.max_bytes);
			break;
		}
		case 'i':
			if (de_parse_ulong("--iters", optarg, 1, 100000, &v, err))
				return -1;
			c->o.iters = (int)v;
			break;
		case 'w':
			if (de_parse_ulong("--warmup", optarg, 0, 100000, &v, err))
				return -1;
			c->o.warmup = (int)v;
			break;
		case 'j':
			c->o.json = 1;
			break;
		case 'q':
			c->o.quiet = 1;
			break;
		case 'I':
			c->o.insecure = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("distenv-check %s\n", PACKAGE_VERSION);
			exit(0);
		default:
			return de_errf(err, "unknown option \"%s\" (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return de_errf(err, "unexpected argument \"%s\" (see --help)", argv[optind]);
	return 0;
}

static int get_u32(const char *name, uint32_t min, uint32_t *out,
		   struct de_err *err)
{
	unsigned long v;

	if (de_parse_ulong(name, getenv(name), min, 0xFFFFFFFFul, &v, err))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* The environment: torchrun's variables where set, else what the plugin
 * would have set from SLURM_* (same code), else an error. */
static int read_env(struct de_check *c, struct de_fail *f)
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
	c->env_source = "torchrun environment";
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
		c->env_source = "SLURM_* variables";
	}
	if (get_u32("WORLD_SIZE", 1, &c->world, &e) || get_u32("RANK", 0, &c->rank, &e))
		return de_fail_set(f, DE_D_ENV, "%s", e.msg);
	if (c->rank >= c->world)
		return de_fail_set(f, DE_D_RANK_RANGE, "RANK=%u is not below WORLD_SIZE=%u",
				   c->rank, c->world);
	c->local_rank = 0;
	c->local_world = 1;
	if (getenv("LOCAL_RANK") && get_u32("LOCAL_RANK", 0, &c->local_rank, &e))
		return de_fail_set(f, DE_D_ENV, "%s", e.msg);
	if (getenv("LOCAL_WORLD_SIZE") && get_u32("LOCAL_WORLD_SIZE", 1, &c->local_world, &e))
		return de_fail_set(f, DE_D_ENV, "%s", e.msg);
	if (c->local_rank >= c->local_world)
		return de_fail_set(f, DE_D_ENV, "LOCAL_RANK=%u is not below LOCAL_WORLD_SIZE=%u",
				   c->local_rank, c->local_world);
	if ((v = getenv("GROUP_RANK")) || (v = getenv("NODE_RANK")))
		c->node_rank = (uint32_t)strtoul(v, NULL, 10);
	if ((v = getenv("GROUP_WORLD_SIZE")) || (v = getenv("SLURM_STEP_NUM_NODES")) ||
	    (v = getenv("SLURM_NNODES")))
		c->nnodes = (uint32_t)strtoul(v, NULL, 10);
	v = getenv("MASTER_ADDR");
	if (v[0] == '\0' || strlen(v) > DE_PROTO_MAX_STR)
		return de_fail_set(f, DE_D_ENV, "MASTER_ADDR=\"%s\": expected a host name", v);
	snprintf(c->master, sizeof(c->master), "%s", v);
	if (de_parse_ulong("MASTER_PORT", getenv("MASTER_PORT"), 1, 65535, &port, &e))
		return de_fail_set(f, DE_D_ENV, "%s", e.msg);
	c->master_port = (uint16_t)port;
	if (gethostname(c->host, sizeof(c->host)) != 0)
		snprintf(c->host, sizeof(c->host), "?");
	/* Only the ranks of this launch may join: other jobs are turned away. */
	if ((v = getenv("SLURM_JOB_ID")) != NULL && have_slurm)
		snprintf(c->token, sizeof(c->token), "slurm:%s.%s", v,
			 getenv("SLURM_STEP_ID") ? getenv("SLURM_STEP_ID") : "batch");
	else if ((v = getenv("DISTENV_TOKEN")) != NULL)
		snprintf(c->token, sizeof(c->token), "token:%.100s", v);
	else
		snprintf(c->token, sizeof(c->token), "manual:%.80s:%u", c->master,
			 c->master_port);
	c->nodelist = getenv("SLURM_STEP_NODELIST");
	return 0;
}

/* Where Slurm placed each rank, for "never arrived (expected on X)". */
static void expect_hosts(struct de_check *c)
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
	c->expect_host = calloc(c->world, sizeof(char *));
	for (node = 0; c->expect_host && node < hl.count && r < c->world; node++) {
		if (de_tasks_per_node_at("T", tpn, node, &cnt, &e))
			break;
		while (cnt-- > 0 && r < c->world)
			c->expect_host[r++] = strdup(hl.host[node]);
	}
	de_hostlist_free(&hl);
}

static int is_numeric_addr(const char *s)
{
	struct addrinfo hints, *res = NULL;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = AI_NUMERICHOST;
	rc = getaddrinfo(s, NULL, &hints, &res);
	if (res)
		freeaddrinfo(res);
	return rc == 0;
}

/* What can be seen before talking to anyone. */
static int preflight(struct de_check *c, struct de_fail *f)
{
	struct de_addr self;
	struct de_err e;
	const char *spec, *how;
	char a[64];
	/* distenv-simulate runs N pseudo-nodes on this one host, all through
	 * 127.0.0.1 by design: the loopback checks are for real nodes. */
	const char *sim = getenv("DISTENV_SIMULATED");
	int multi = c->nnodes > 1 && (sim == NULL || *sim == '\0');

	if (de_resolve(c->master, c->master_port, &c->master_addr, &e))
		return de_fail_set(f, DE_D_MASTER_RESOLVE, "MASTER_ADDR: %s", e.msg);
	if (multi && de_addr_is_loopback(&c->master_addr)) {
		de_addr_str(&c->master_addr, a, sizeof(a));
		return de_fail_set(f, DE_D_MASTER_LOOPBACK,
				   "MASTER_ADDR=%s is %s (loopback) but the job spans %u nodes",
				   c->master, a, c->nnodes);
	}
	if (multi && de_resolve(c->host, 0, &self, &e) == 0 && de_addr_is_loopback(&self)) {
		de_addr_str(&self, a, sizeof(a));
		return de_fail_set(f, DE_D_HOST_LOOPBACK,
				   "this node's name %s resolves to %s (loopback) on a %u-node job",
				   c->host, a, c->nnodes);
	}
	if (c->nodelist != NULL && !is_numeric_addr(c->master) &&
	    de_hostlist_find(c->nodelist, DE_HL_SUFFIX, c->master, &e) < 0)
		return de_fail_set(f, DE_D_MASTER_NOT_IN_STEP,
				   "MASTER_ADDR=%s is not one of this step's nodes (%s)",
				   c->master, c->nodelist);
	/* The data listener: the interface the user named, else the one
	 * that routes to MASTER_ADDR, as gloo does. */
	if ((spec = getenv("DISTENV_SOCKET_IFNAME")) != NULL && *spec) {
		how = "DISTENV_SOCKET_IFNAME";
	} else if ((spec = getenv("GLOO_SOCKET_IFNAME")) != NULL && *spec) {
		how = "GLOO_SOCKET_IFNAME";
	} else if ((spec = getenv("NCCL_SOCKET_IFNAME")) != NULL && *spec) {
		how = "NCCL_SOCKET_IFNAME";
	} else {
		spec = NULL;
		how = "route to MASTER_ADDR";
	}
	if (spec != NULL) {
		char exact[300];

		/* GLOO_SOCKET_IFNAME is one exact name; the others match as NCCL does. */
		if (strcmp(how, "GLOO_SOCKET_IFNAME") == 0)
			snprintf(exact, sizeof(exact), "=%s", spec);
		else
			snprintf(exact, sizeof(exact), "%s", spec);
		if (de_iface_pick(exact, c->master_addr.ss.ss_family, &c->data_addr,
				  c->iface, sizeof(c->iface), &e))
			return de_fail_set(f, DE_D_USAGE, "%s=%s: %s", how, spec, e.msg);
		snprintf(c->iface_how, sizeof(c->iface_how), "%s=%s", how, spec);
	} else {
		if (de_route_source(&c->master_addr, &c->data_addr, c->iface,
				    sizeof(c->iface), &e))
			return de_fail_set(f, DE_D_MASTER_TIMEOUT, "MASTER_ADDR=%s: %s",
					   c->master, e.msg);
		snprintf(c->iface_how, sizeof(c->iface_how), "%s", how);
	}
	if (multi && de_addr_is_loopback(&c->data_addr)) {
		de_addr_str(&c->data_addr, a, sizeof(a));
		return de_fail_set(f, DE_D_USAGE,
				   "the data interface %s (%s, by %s) is loopback on a %u-node job",
				   c->iface, a, c->iface_how, c->nnodes);
	}
	c->data_fd = de_listen(&c->data_addr, 128, &e);
	if (c->data_fd < 0)
		return de_fail_set(f, DE_D_USAGE, "data listener: %s", e.msg);
	return 0;
}

static const char *backend_name(enum de_backend b)
{
	return b == DE_BACKEND_NCCL ? "nccl" : b == DE_BACKEND_SOCKET ? "socket" : "auto";
}

static int choose_backend(struct de_check *c, struct de_fail *f)
{
	snprintf(c->device, sizeof(c->device), "cpu");
#ifdef HAVE_NCCL
	{
		char why[512] = "";
		int gpus = de_nccl_device_count(why, sizeof(why));

		if (c->o.backend == DE_BACKEND_AUTO)
			c->backend = gpus > 0 ? DE_BACKEND_NCCL : DE_BACKEND_SOCKET;
		else
			c->backend = c->o.backend;
		if (c->backend == DE_BACKEND_NCCL) {
			if (gpus <= 0)
				return de_fail_set(f, DE_D_GPU, "--backend=nccl but no GPU is visible: %s", why);
			return de_nccl_select(c, f);
		}
		return 0;
	}
#else
	if (c->o.backend == DE_BACKEND_NCCL)
		return de_fail_set(f, DE_D_USAGE, "--backend=nccl: this distenv-check was built without CUDA/NCCL");
	c->backend = DE_BACKEND_SOCKET;
	return 0;
#endif
}

static void print_fail(const struct de_check *c, const struct de_fail *f)
{
	if (c->o.json) {
		char msg[sizeof(f->msg) * 2];
		size_t i, j = 0;

		for (i = 0; f->msg[i] && j < sizeof(msg) - 2; i++) {
			if (f->msg[i] == '"' || f->msg[i] == '\\')
				msg[j++] = '\\';
			msg[j++] = (char)((unsigned char)f->msg[i] < 0x20 ? ' ' : f->msg[i]);
		}
		msg[j] = '\0';
		printf("{\"rank\":%u,\"world\":%u,\"node\":\"%s\",\"ok\":false,"
		       "\"diagnosis\":\"%s\",\"message\":\"%s\",\"hint\":\"%s\"}\n",
		       c->rank, c->world, c->host, de_diag_name(f->diag), msg,
		       de_diag_hint(f->diag));
	} else if (c->world == 0) {
		/* No rank yet: the environment itself is the problem. */
		printf("distenv-check: FAIL %s: %s -- %s\n", de_diag_name(f->diag), f->msg,
		       de_diag_hint(f->diag));
	} else {
		printf("[rank %u/%u] node=%s FAIL %s: %s -- %s\n", c->rank, c->world,
		       c->host, de_diag_name(f->diag), f->msg, de_diag_hint(f->diag));
	}
	fflush(stdout);
}

static void rank_ranges(const struct de_check *c, char *out, size_t len)
{
	uint32_t nodes = 0, i, j, n;
	size_t off = 0;

	for (i = 0; i < c->world; i++)
		if (c->peers.peer[i].node + 1 > nodes)
			nodes = c->peers.peer[i].node + 1;
	out[0] = '\0';
	for (n = 0; n < nodes && off < len - 100; n++) {
		uint32_t cnt = 0, first = 0;

		for (j = 0; j < c->world; j++)
			if (c->peers.peer[j].node == n) {
				if (cnt++ == 0)
					first = j;
			}
		off += (size_t)snprintf(out + off, len - off, "%s%s: %u rank%s from %u",
					off ? ", " : "", c->peers.peer[first].host, cnt,
					cnt == 1 ? "" : "s", first);
	}
}

static int nodes_in(const struct de_check *c)
{
	uint32_t i, m = 0;

	for (i = 0; i < c->world; i++)
		if (c->peers.peer[i].node + 1 > m)
			m = c->peers.peer[i].node + 1;
	return (int)m;
}

/* One collective: fills, reduces, verifies. Returns #wrong, or -1. */
static long run_collective(struct de_check *c, void *buf, size_t count,
			   int iters, int warmup, double *usec, struct de_fail *f)
{
	enum de_dtype t = c->o.dtype;
	double total = 0;
	int i;

	for (i = 0; i < warmup + iters; i++) {
		double us = 0;

		de_fill_input(t, buf, count, c->rank);
#ifdef HAVE_NCCL
		if (c->backend == DE_BACKEND_NCCL) {
			if (de_nccl_allreduce(c, buf, count, t, 1, &us, f))
				return -1;
		} else
#endif
		{
			int64_t a = de_now_us();

			if (de_ring_allreduce(c, buf, count, t, f))
				return -1;
			us = (double)(de_now_us() - a);
		}
		if (i >= warmup)
			total += us;
	}
	*usec = iters > 0 ? total / iters : 0;
	return (long)de_verify_sum(t, buf, count, c->world);
}

static int check_mode(struct de_check *c, size_t count, struct de_fail *f)
{
	enum de_dtype t = c->o.dtype;
	void *buf = malloc(count ? count * de_dtype_size(t) : 1);
	char line[512], ranges[1024];
	double us = 0, got, want;
	long wrong;

	if (buf == NULL)
		return de_fail_set(f, DE_D_INTERNAL, "out of memory for %zu elements", count);
	wrong = run_collective(c, buf, count, 1, 0, &us, f);
	if (wrong < 0) {
		/* Tell rank 0 why; the job's verdict comes back. */
		free(buf);
		return de_rdv_report_failure(c, f);
	}
	got = count ? de_value_at(t, buf, 0) : 0;
	want = count ? de_expected(0, c->world) : 0;
	free(buf);
	snprintf(line, sizeof(line),
		 "[rank %u/%u] node=%s local_rank=%u/%u device=%s backend=%s allreduce=%.17g (expected %.17g) %s",
		 c->rank, c->world, c->host, c->local_rank, c->local_world, c->device,
		 backend_name(c->backend), got, want, wrong == 0 ? "OK" : "WRONG");
	if (c->o.json)
		printf("{\"rank\":%u,\"world\":%u,\"node\":\"%s\",\"local_rank\":%u,"
		       "\"local_world_size\":%u,\"device\":\"%s\",\"backend\":\"%s\","
		       "\"dtype\":\"%s\",\"count\":%zu,\"allreduce\":%.17g,\"expected\":%.17g,"
		       "\"wrong\":%ld,\"interface\":\"%s\",\"rendezvous_ms\":%.0f,\"ok\":%s}\n",
		       c->rank, c->world, c->host, c->local_rank, c->local_world, c->device,
		       backend_name(c->backend), de_dtype_name(t), count, got, want, wrong,
		       c->iface, c->rdv_ms, wrong == 0 ? "true" : "false");
	else if (!c->o.quiet || wrong)
		printf("%s\n", line);
	fflush(stdout);
	if (de_rdv_phase(c, wrong ? DE_D_WRONG_RESULT : DE_OK, (uint64_t)wrong,
			 wrong ? line : "", NULL, 0, f))
		return -1;
	if (c->rank == 0 && !c->o.json) {
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		rank_ranges(c, ranges, sizeof(ranges));
		printf("distenv-check: PASS: %u rank%s on %d node%s (%s); data interface %s (%s); "
		       "rendezvous %.0f ms (authentication: %s); allreduce of %zu %s verified on every rank; "
		       "rank 0 peak RSS %ld KiB\n",
		       c->world, c->world == 1 ? "" : "s", nodes_in(c), nodes_in(c) == 1 ? "" : "s", ranges, c->iface,
		       c->iface_how, c->rdv_ms, de_auth_name(c), count, de_dtype_name(t),
		       ru.ru_maxrss);
	}
	return 0;
}

/* The bench buffer, on transparent huge pages where it is big enough:
 * the kernel's copies in and out of a 64 MiB buffer walk 16384 small
 * pages otherwise, and the TLB misses cost ~10% of the bandwidth here.
 * madvise is advice: where THP is off, the buffer is simply small pages. */
static void *bench_alloc(size_t bytes)
{
	const size_t huge = 2u << 20;
	void *p = NULL;

	if (bytes < huge)
		return malloc(bytes);
	bytes = (bytes + huge - 1) / huge * huge;
	if (posix_memalign(&p, huge, bytes) != 0)
		return NULL;
	(void)madvise(p, bytes, MADV_HUGEPAGE);
	return p;
}

static int bench_mode(struct de_check *c, struct de_fail *f)
{
	enum de_dtype t = c->o.dtype;
	size_t esz = de_dtype_size(t), bytes;
	void *buf = bench_alloc(c->o.max_bytes + esz);
	int printed = 0;

	if (buf == NULL)
		return de_fail_set(f, DE_D_INTERNAL, "out of memory for %zu bytes", c->o.max_bytes);
	for (bytes = c->o.min_bytes; bytes <= c->o.max_bytes; bytes = bytes ? bytes * 2 : esz) {
		size_t count = bytes / esz;
		double us = 0, algbw, busbw;
		long wrong;
		char text[128];

		if (c->rank == 0 && !c->o.quiet && bytes >= (16u << 20))
			fprintf(stderr, "distenv-check: bench %zu bytes...\n", bytes);
		wrong = run_collective(c, buf, count, c->o.iters, c->o.warmup, &us, f);
		if (wrong < 0) {
			free(buf);
			return de_rdv_report_failure(c, f);
		}
		snprintf(text, sizeof(text), "%ld wrong of %zu at %zu bytes", wrong, count, bytes);
		if (de_rdv_phase(c, wrong ? DE_D_WRONG_RESULT : DE_OK, (uint64_t)wrong,
				 wrong ? text : "", NULL, 0, f)) {
			free(buf);
			return -1;
		}
		if (c->rank == 0) {
			if (!printed++) {
				printf("# distenv-check --bench: %u ranks, %d node%s, backend %s, %s, %d iters (+%d warm-up)\n",
				       c->world, nodes_in(c), nodes_in(c) == 1 ? "" : "s", backend_name(c->backend),
				       de_dtype_name(t), c->o.iters, c->o.warmup);
				printf("%12s %12s %8s %6s %12s %12s %12s %8s\n", "size", "count",
				       "type", "redop", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
			}
			algbw = us > 0 ? (double)(count * esz) / us / 1e3 : 0;
			busbw = algbw * 2.0 * (c->world - 1) / c->world;
			printf("%12zu %12zu %8s %6s %12.1f %12.3f %12.3f %8ld\n", count * esz,
			       count, de_dtype_name(t), "sum", us, algbw, busbw, wrong);
			fflush(stdout);
		}
		if (bytes == 0 && esz == 0)
			break;
	}
	free(buf);
	return 0;
}

static int count_sizes(const struct de_check *c)
{
	size_t esz = de_dtype_size(c->o.dtype), b;
	int n = 0;

	for (b = c->o.min_bytes; b <= c->o.max_bytes; b = b ? b * 2 : esz)
		n++;
	return n;
}

int main(int argc, char **argv)
{
	struct de_check c;
	struct de_fail f;
	struct de_err e;
	size_t count;
	char report[2048];
	int rc = 1;

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
	memset(&c, 0, sizeof(c));
	memset(&f, 0, sizeof(f));
	c.rdv_fd = c.data_fd = c.left_fd = c.right_fd = -1;
	if (parse_opts(&c, argc, argv, &count, &e)) {
		fprintf(stderr, "distenv-check: %s\n", e.msg);
		return 2;
	}
	if (read_env(&c, &f) || de_dtype_world_ok(c.o.dtype, c.world, &e) < 0 ||
	    de_auth_init(&c, c.o.insecure, &f) || choose_backend(&c, &f) || preflight(&c, &f)) {
		if (f.diag == DE_OK)
			de_fail_set(&f, DE_D_USAGE, "%s", e.msg);
		print_fail(&c, &f);
		return f.diag == DE_D_USAGE ? 2 : 1;
	}
	c.nphases = 1 + (c.o.bench ? count_sizes(&c) : 1);
	snprintf(c.params, sizeof(c.params), "%s %s count=%zu sizes=%zu:%zu iters=%d warmup=%d",
		 c.o.bench ? "bench" : "check", de_dtype_name(c.o.dtype),
		 c.o.bench ? 0 : count, c.o.bench ? c.o.min_bytes : 0,
		 c.o.bench ? c.o.max_bytes : 0, c.o.bench ? c.o.iters : 0,
		 c.o.bench ? c.o.warmup : 0);
	if (c.rank == 0) {
		expect_hosts(&c);
#ifdef HAVE_NCCL
		if (c.backend == DE_BACKEND_NCCL) {
			if (de_nccl_unique_id(c.peers.nccl_id, &f))
				goto out;
			c.peers.nccl_id_len = DE_NCCL_ID_BYTES;
		}
#endif
		if (de_auth_session_new(&c, &f) || de_rdv_server_start(&c, &f))
			goto out;
	}
	if (de_acceptor_start(&c, &f) || de_rdv_join(&c, &f))
		goto out;
	/* Phase 0: every pair of nodes, both directions, as NCCL/gloo will. */
	if (de_probe_nodes(&c, &f, report, sizeof(report)) != 0) {
		de_rdv_report_failure(&c, &f);
		goto out;
	}
	if (de_rdv_phase(&c, DE_OK, 0, "", NULL, 0, &f))
		goto out;
#ifdef HAVE_NCCL
	if (c.backend == DE_BACKEND_NCCL) {
		if (de_nccl_init(&c, &f)) {
			de_rdv_report_failure(&c, &f);
			goto out;
		}
	} else
#endif
	if (de_ring_connect(&c, &f)) {
		de_rdv_report_failure(&c, &f);
		goto out;
	}
	if (c.o.bench ? bench_mode(&c, &f) : check_mode(&c, count, &f))
		goto out;
	rc = 0;
out:
	if (rc != 0)
		print_fail(&c, &f);
	de_ring_close(&c);
#ifdef HAVE_NCCL
	if (c.backend == DE_BACKEND_NCCL)
		de_nccl_fini(&c);
#endif
	if (c.rdv_fd >= 0)
		close(c.rdv_fd);
	de_acceptor_stop(&c);
	if (c.rank == 0)
		de_rdv_server_stop();
	de_rbuf_free(&c.rdv_rb);
	de_peers_free(&c.peers);
	if (c.expect_host) {
		uint32_t i;

		for (i = 0; i < c.world; i++)
			free(c.expect_host[i]);
		free(c.expect_host);
	}
	if (c.data_fd >= 0)
		close(c.data_fd);
	return rc;
}
