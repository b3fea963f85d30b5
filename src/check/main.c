/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv-check: proves the ranks of a job can talk, on the real network,
 * before training. Reads the torchrun environment (or derives it from
 * SLURM_* with the plugin's own code), meets the other ranks at
 * MASTER_ADDR:MASTER_PORT, probes every pair of nodes, runs an allreduce
 * (TCP ring or NCCL), verifies it, and prints one line per rank, or one
 * named diagnosis. Never hangs: --timeout bounds the whole run (budget.h). */
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
#include "backend.h"
#include "check.h"
#include "hostlist.h"
#include "layout.h"
#include "opterr.h"
#include "pairs.h"
#include "pairs_report.h"
#include "parse.h"
#include "rendezvous.h"
#include "report.h"
#include "secret.h"
#include "settings.h"
#include "socket.h"
#include "world.h"

#define DEFAULT_COUNT 262147 /* ~1 MiB of float32, not divisible by small worlds */

static const char *env_get(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

/* --help's authentication part: de_auth_methods, in its order. */
static void usage_auth(FILE *out)
{
	size_t i;

	fprintf(out, "Authentication, the first that applies (the PASS line names it):\n");
	for (i = 0; i < DE_AUTH_NMETHODS; i++)
		fprintf(out, "  %zu. %s: %s\n       %s\n", i + 1, de_auth_methods[i].name,
			de_auth_methods[i].when, de_auth_methods[i].what);
	fprintf(out, "  none of them: distenv-check refuses to run (usage, exit status 2).\n");
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: distenv-check [OPTIONS]\n"
		"Run in every rank of a job (srun --dist-check, srun distenv-check, torchrun,\n"
		"or by hand with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set) to prove the\n"
		"ranks can talk: rendezvous, node-to-node probe, allreduce, verification.\n\n"
		"  --backend=auto|socket|nccl  auto: nccl when NCCL and the CUDA runtime load\n"
		"                              (at run time) and a GPU is visible, else socket\n"
		"  --timeout=SECONDS           bound on the whole run (default 60): every wait\n"
		"                              ends by it, the verdict comes at most 2 s later\n"
		"  --count=N                   elements in the check's allreduce (default %d)\n"
		"  -d, --dtype=float32|float64|int32|int64  (default float32)\n"
		"  --bench                     size sweep with bandwidth table (nccl-tests style)\n"
		"  -b, --minbytes=SIZE         bench sizes from SIZE (default 8) ...\n"
		"  -e, --maxbytes=SIZE         ... to SIZE (default 64M) ...\n"
		"  -f, --stepfactor=N          ... multiplying by N (default 2)\n"
		"  --sizes=MIN:MAX             the same as -b MIN -e MAX\n"
		"                              SIZE: bytes, with K, M or G (1024-based)\n"
		"  -n, --iters=N               timed iterations per size (default 20)\n"
		"  -w, --warmup=N              untimed iterations per size (default 5)\n"
		"  --pairs                     the pair matrix instead of the allreduce (one\n"
		"                              task per node): every pair of nodes in the rounds\n"
		"                              of a round-robin tournament, bandwidth both ways\n"
		"                              and latency; rank 0 names failing and slow nodes\n"
		"                              and links\n"
		"  --pair-bytes=SIZE           per pair and direction (default 4M), each transfer\n"
		"                              also bounded to 2 s\n"
		"  --pair-threshold=X          slow: below X times the median pair (default 0.5)\n"
		"  --pairs-out=DIR             rank 0 writes DIR/pairs.json, pairs.csv and\n"
		"                              pairs.png (a heatmap, drawn by gnuplot)\n"
		"  --json                      one JSON object per rank instead of the line;\n"
		"                              with --bench, rank 0 writes one JSON document\n"
		"  --json-summary=FILE         rank 0 writes the job's verdict to FILE (JSON)\n"
		"  --quiet                     only failures and rank 0's verdict\n"
		"  -v, --verbose               each rank names on stderr the backend it picked,\n"
		"                              why (auto: why not NCCL), NCCL's version and files\n"
		"  --insecure                  no authentication (anyone may join): only with a warning\n"
		"  -h, --help, -V, --version\n"
		"Options take VALUE as --opt=VALUE or --opt VALUE; long names may be\n"
		"shortened while unambiguous.\n\n"
		"Exact at any size: the check's inputs are small integers, exact in float32\n"
		"up to 2^24 ranks and in int32 up to 2^31-1; float64 and int64 at any size.\n"
		"Environment: DISTENV_SOCKET_IFNAME (or GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME)\n"
		"picks the data interface; by default the one that routes to MASTER_ADDR.\n",
		DEFAULT_COUNT);
	usage_auth(out);
	fprintf(out,
		"Exit status: 0 every rank verified, 1 the check failed, 2 bad usage or a bad\n"
		"variable, found before the rendezvous. See man distenv-check.\n");
}

/* SIZE: a byte count with an optional K/M/G (1024-based) suffix. */
static int parse_bytes(const char *what, const char *s, size_t *out,
		       struct de_err *err)
{
	char num[32];
	size_t n = strlen(s), mult = 1;
	unsigned long v;

	if (n == 0 || n >= sizeof(num))
		return de_errf(err, "%s \"%s\": expected a byte count like 8, 4K, 64M or 1G", what, s);
	memcpy(num, s, n + 1);
	switch (num[n - 1]) {
	case 'K': case 'k': mult = 1ul << 10; num[n - 1] = '\0'; break;
	case 'M': case 'm': mult = 1ul << 20; num[n - 1] = '\0'; break;
	case 'G': case 'g': mult = 1ul << 30; num[n - 1] = '\0'; break;
	default: break;
	}
	if (num[0] < '0' || num[0] > '9' ||
	    de_parse_ulong(what, num, 0, (4ul << 30) / mult, &v, NULL))
		return de_errf(err, "%s \"%s\": expected a byte count like 8, 4K, 64M or 1G (at most 4G)",
			       what, s);
	*out = v * mult;
	return 0;
}

enum {
	OPT_BACKEND = 256, OPT_TIMEOUT, OPT_COUNT, OPT_BENCH, OPT_SIZES,
	OPT_JSON, OPT_QUIET, OPT_INSECURE, OPT_SUMMARY,
	OPT_PAIRS, OPT_PAIR_BYTES, OPT_PAIR_THRESHOLD, OPT_PAIRS_OUT,
};

/* --pair-threshold: a fraction in (0, 1]. */
static int parse_fraction(const char *what, const char *s, double *out, struct de_err *err)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (*s == '\0' || *end != '\0' || errno != 0 || !(v > 0 && v <= 1))
		return de_errf(err, "%s \"%s\": expected a fraction of the median pair in (0, 1], e.g. 0.5",
			       what, s);
	*out = v;
	return 0;
}

/* The option as the user wrote it, for errors: "-b" or "--minbytes". */
static const char *opt_name(const struct option *longopts, int ch, int idx,
			    char *buf, size_t len)
{
	if (idx >= 0)
		snprintf(buf, len, "--%s", longopts[idx].name);
	else
		snprintf(buf, len, "-%c", ch);
	return buf;
}

static int parse_opts(struct de_check *c, int argc, char **argv,
		      size_t *count, struct de_err *err)
{
	static const struct option longopts[] = {
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "dtype", required_argument, NULL, 'd' },
		{ "bench", no_argument, NULL, OPT_BENCH },
		{ "minbytes", required_argument, NULL, 'b' },
		{ "maxbytes", required_argument, NULL, 'e' },
		{ "stepfactor", required_argument, NULL, 'f' },
		{ "sizes", required_argument, NULL, OPT_SIZES },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "json-summary", required_argument, NULL, OPT_SUMMARY },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "verbose", no_argument, NULL, 'v' },
		{ "insecure", no_argument, NULL, OPT_INSECURE },
		{ "pairs", no_argument, NULL, OPT_PAIRS },
		{ "pair-bytes", required_argument, NULL, OPT_PAIR_BYTES },
		{ "pair-threshold", required_argument, NULL, OPT_PAIR_THRESHOLD },
		{ "pairs-out", required_argument, NULL, OPT_PAIRS_OUT },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	char name[32];
	int ch, idx, pair_opt = 0;

	c->o.backend = DE_BACKEND_AUTO;
	c->o.pair_bytes = 4u << 20;
	c->o.pair_threshold = 0.5;
	c->o.timeout_s = 60;
	c->o.min_bytes = 8;
	c->o.max_bytes = 64u << 20;
	c->o.factor = 2;
	c->o.iters = 20;
	c->o.warmup = 5;
	c->o.dtype = DE_F32;
	*count = DEFAULT_COUNT;
	opterr = 0;
	for (idx = -1; (ch = getopt_long(argc, argv, ":hvVd:b:e:f:n:w:", longopts, &idx)) != -1; idx = -1) {
		const char *opt = opt_name(longopts, ch, idx, name, sizeof(name));

		switch (ch) {
		case OPT_BACKEND:
			if (strcmp(optarg, "auto") == 0)
				c->o.backend = DE_BACKEND_AUTO;
			else if (strcmp(optarg, "socket") == 0)
				c->o.backend = DE_BACKEND_SOCKET;
			else if (strcmp(optarg, "nccl") == 0)
				c->o.backend = DE_BACKEND_NCCL;
			else
				return de_errf(err, "--backend \"%s\": expected auto, socket or nccl", optarg);
			break;
		case OPT_TIMEOUT:
			if (de_parse_ulong("--timeout", optarg, 1, 86400, &v, err))
				return -1;
			c->o.timeout_s = (int)v;
			break;
		case OPT_COUNT:
			if (de_parse_ulong("--count", optarg, 1, 1ul << 30, &v, err))
				return -1;
			*count = v;
			break;
		case 'd':
			if (de_dtype_parse(optarg, &c->o.dtype, err))
				return -1;
			break;
		case OPT_BENCH:
			c->o.bench = 1;
			break;
		case 'b':
			if (parse_bytes(opt, optarg, &c->o.min_bytes, err))
				return -1;
			break;
		case 'e':
			if (parse_bytes(opt, optarg, &c->o.max_bytes, err))
				return -1;
			break;
		case 'f':
			if (de_parse_ulong(opt, optarg, 2, 1024, &v, err))
				return -1;
			c->o.factor = (unsigned)v;
			break;
		case OPT_SIZES: {
			char buf[64], *colon;

			snprintf(buf, sizeof(buf), "%s", optarg);
			colon = strchr(buf, ':');
			if (colon == NULL)
				return de_errf(err, "--sizes \"%s\": expected MIN:MAX, e.g. 8:64M", optarg);
			*colon = '\0';
			if (parse_bytes("--sizes MIN", buf, &c->o.min_bytes, err) ||
			    parse_bytes("--sizes MAX", colon + 1, &c->o.max_bytes, err))
				return -1;
			break;
		}
		case 'n':
			if (de_parse_ulong(opt, optarg, 1, 100000, &v, err))
				return -1;
			c->o.iters = (int)v;
			break;
		case 'w':
			if (de_parse_ulong(opt, optarg, 0, 100000, &v, err))
				return -1;
			c->o.warmup = (int)v;
			break;
		case OPT_JSON:
			c->o.json = 1;
			break;
		case OPT_SUMMARY:
			if (*optarg == '\0')
				return de_errf(err, "--json-summary needs a file name");
			c->o.summary = optarg;
			break;
		case OPT_QUIET:
			c->o.quiet = 1;
			break;
		case OPT_INSECURE:
			c->o.insecure = 1;
			break;
		case OPT_PAIRS:
			c->o.pairs = 1;
			break;
		case OPT_PAIR_BYTES:
			if (parse_bytes(opt, optarg, &c->o.pair_bytes, err))
				return -1;
			if (c->o.pair_bytes < PAIR_MIN_BYTES)
				return de_errf(err, "%s \"%s\": expected at least 64K (a smaller transfer measures latency, not bandwidth)",
					       opt, optarg);
			pair_opt = 1;
			break;
		case OPT_PAIR_THRESHOLD:
			if (parse_fraction(opt, optarg, &c->o.pair_threshold, err))
				return -1;
			pair_opt = 1;
			break;
		case OPT_PAIRS_OUT:
			if (*optarg == '\0')
				return de_errf(err, "--pairs-out needs a folder name");
			c->o.pairs_out = optarg;
			pair_opt = 1;
			break;
		case 'v':
			c->o.verbose = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("distenv-check (distenv) %s\n", PACKAGE_VERSION);
			exit(0);
		default: /* ':' or '?' */
			return de_opterr(err, argc, argv, optind, optopt, longopts, ch);
		}
	}
	if (optind < argc)
		return de_errf(err, "unexpected argument \"%s\"", argv[optind]);
	if (pair_opt && !c->o.pairs)
		return de_errf(err, "--pair-bytes, --pair-threshold and --pairs-out go with --pairs");
	if (c->o.pairs && c->o.bench)
		return de_errf(err, "--pairs and --bench: one at a time");
	if (c->o.pairs && c->o.json)
		return de_errf(err, "--json and --pairs: the pair matrix has no JSON on standard output; --pairs-out=DIR writes DIR/pairs.json");
	if (c->o.pairs && c->o.summary != NULL)
		return de_errf(err, "--json-summary is the check's verdict: with --pairs, --pairs-out=DIR writes pairs.json");
	/* Bench sizes must hold at least one element each. */
	if (c->o.min_bytes > c->o.max_bytes)
		return de_errf(err, "bench sizes: MIN %zu is above MAX %zu bytes",
			       c->o.min_bytes, c->o.max_bytes);
	if (c->o.min_bytes < de_dtype_size(c->o.dtype))
		return de_errf(err, "bench sizes: MIN %zu bytes is less than one %s element (%zu bytes)",
			       c->o.min_bytes, de_dtype_name(c->o.dtype), de_dtype_size(c->o.dtype));
	return 0;
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
static int get_str(const char *name, const char *expected, const char **out,
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
	if (get_str("DISTENV_TOKEN", "a token naming this launch, the same in every rank", &v, f))
		return -1;
	if (getenv("SLURM_JOB_ID") != NULL && have_slurm)
		snprintf(c->id.token, sizeof(c->id.token), "slurm:%s.%s", getenv("SLURM_JOB_ID"),
			 getenv("SLURM_STEP_ID") ? getenv("SLURM_STEP_ID") : "batch");
	else if (v != NULL)
		snprintf(c->id.token, sizeof(c->id.token), "token:%.100s", v);
	else
		snprintf(c->id.token, sizeof(c->id.token), "manual:%.80s:%u", c->id.master,
			 c->id.master_port);
	if (get_str("SLURM_STEP_NODELIST", "the step's nodes (a hostlist expression)", &c->id.nodelist, f))
		return -1;
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
	c->id.expect_host = calloc(c->id.world, sizeof(char *));
	for (node = 0; c->id.expect_host && node < hl.count && r < c->id.world; node++) {
		if (de_tasks_per_node_at("T", tpn, node, &cnt, &e))
			break;
		while (cnt-- > 0 && r < c->id.world)
			c->id.expect_host[r++] = strdup(hl.host[node]);
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

/* On a job of several nodes nothing may go through loopback: MASTER_ADDR
 * or this host's name (peers are told to connect to it)... */
static int name_loopback(struct de_check *c, uint32_t nodes, const char *counted,
			 struct de_fail *f)
{
	struct de_addr self;
	struct de_err e;
	char a[64];

	if (nodes <= 1 || c->id.simulated)
		return 0;
	if (de_addr_is_loopback(&c->net.master_addr)) {
		de_addr_str(&c->net.master_addr, a, sizeof(a));
		return de_fail_set(f, DE_D_MASTER_LOOPBACK,
				   "MASTER_ADDR=%s is %s (loopback) but the job spans %u nodes%s",
				   c->id.master, a, nodes, counted);
	}
	if (de_resolve(c->id.host, 0, &self, &e) == 0 && de_addr_is_loopback(&self)) {
		de_addr_str(&self, a, sizeof(a));
		return de_fail_set(f, DE_D_HOST_LOOPBACK,
				   "this node's name %s resolves to %s (loopback) on a %u-node job%s",
				   c->id.host, a, nodes, counted);
	}
	return 0;
}

/* ... or the data interface. */
static int iface_loopback(struct de_check *c, uint32_t nodes, const char *counted,
			  struct de_fail *f)
{
	char a[64];

	if (nodes <= 1 || c->id.simulated)
		return 0;
	if (de_addr_is_loopback(&c->net.data_addr)) {
		de_addr_str(&c->net.data_addr, a, sizeof(a));
		return de_fail_set(f, DE_D_USAGE,
				   "the data interface %s (%s, by %s) is loopback on a %u-node job%s%s",
				   c->net.iface, a, c->net.iface_how, nodes, counted,
				   strchr(c->net.iface_how, '=') ? "" :
				   ": name the interface the other nodes reach in DISTENV_SOCKET_IFNAME");
	}
	return 0;
}

/* After the join: a hand run on several machines has no node count from
 * Slurm or torchrun, but the peer table has one. */
static int joined_checks(struct de_check *c, struct de_fail *f)
{
	uint32_t nodes = de_peers_nodes(&c->peers);

	const char *counted = " (counted from the ranks' host names)";

	if (c->id.nnodes != 0)
		return 0;
	return name_loopback(c, nodes, counted, f) || iface_loopback(c, nodes, counted, f) ? -1 : 0;
}

/* GLOO_SOCKET_IFNAME as PyTorch reads it: exact names, comma separated,
 * every one must exist (gloo opens a device on each); the data listener
 * takes the first. */
static int gloo_ifaces(struct de_check *c, const char *spec, struct de_fail *f)
{
	char list[256], exact[80], *tok, *save = NULL, name[64];
	struct de_addr a;
	struct de_err e;
	int first = 1;

	if (strlen(spec) >= sizeof(list))
		return de_fail_set(f, DE_D_USAGE, "GLOO_SOCKET_IFNAME is %zu characters: expected interface names",
				   strlen(spec));
	snprintf(list, sizeof(list), "%s", spec);
	for (tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		snprintf(exact, sizeof(exact), "=%.60s", tok);
		if (de_iface_pick(exact, c->net.master_addr.ss.ss_family, &a, name, sizeof(name), &e))
			return de_fail_set(f, DE_D_USAGE, "GLOO_SOCKET_IFNAME=\"%s\": %s%s", spec, e.msg,
					   strchr(spec, ',') ? "; gloo opens a device on every name listed, so each must exist" : "");
		if (first) {
			c->net.data_addr = a;
			snprintf(c->net.iface, sizeof(c->net.iface), "%s", name);
			first = 0;
		}
	}
	if (first)
		return de_fail_set(f, DE_D_USAGE, "GLOO_SOCKET_IFNAME=\"%s\": expected interface names, comma separated",
				   spec);
	return 0;
}

/* What can be seen before talking to anyone. */
static int preflight(struct de_check *c, struct de_fail *f)
{
	struct de_err e;
	const char *spec, *how;

	if (name_loopback(c, c->id.nnodes, "", f))
		return -1;
	if (c->id.nodelist != NULL && !is_numeric_addr(c->id.master) &&
	    de_hostlist_find(c->id.nodelist, DE_HL_SUFFIX, c->id.master, &e) < 0)
		return de_fail_set(f, DE_D_MASTER_NOT_IN_STEP,
				   "MASTER_ADDR=%s is not one of this step's nodes (%s)",
				   c->id.master, c->id.nodelist);
	/* The data listener: the interface the user named, else the one
	 * that routes to MASTER_ADDR, as gloo does. */
	/* DISTENV_SOCKET_IFNAME is ours: empty is an error, as for every
	 * variable of distenv's. GLOO_ and NCCL_SOCKET_IFNAME keep their
	 * owners' reading: empty is not set (PyTorch, NCCL). */
	if (get_str("DISTENV_SOCKET_IFNAME", "interface names in NCCL's syntax (eth0, =eth0, ^docker)", &spec, f))
		return -1;
	if (spec != NULL) {
		how = "DISTENV_SOCKET_IFNAME";
	} else if ((spec = getenv("GLOO_SOCKET_IFNAME")) != NULL && *spec) {
		how = "GLOO_SOCKET_IFNAME";
	} else if ((spec = getenv("NCCL_SOCKET_IFNAME")) != NULL && *spec) {
		how = "NCCL_SOCKET_IFNAME";
	} else {
		spec = NULL;
		how = "route to MASTER_ADDR";
	}
	if (spec != NULL && strcmp(how, "GLOO_SOCKET_IFNAME") == 0) {
		if (gloo_ifaces(c, spec, f))
			return -1;
		snprintf(c->net.iface_how, sizeof(c->net.iface_how), "%s=%s", how, spec);
	} else if (spec != NULL) {
		/* NCCL's syntax: prefixes, =exact, ^exclude, comma lists. */
		if (de_iface_pick(spec, c->net.master_addr.ss.ss_family, &c->net.data_addr,
				  c->net.iface, sizeof(c->net.iface), &e))
			return de_fail_set(f, DE_D_USAGE, "%s=\"%s\": %s", how, spec, e.msg);
		snprintf(c->net.iface_how, sizeof(c->net.iface_how), "%s=%s", how, spec);
	} else {
		if (de_route_source(&c->net.master_addr, &c->net.data_addr, c->net.iface,
				    sizeof(c->net.iface), &e))
			return de_fail_set(f, DE_D_MASTER_TIMEOUT, "MASTER_ADDR=%s: %s",
					   c->id.master, e.msg);
		snprintf(c->net.iface_how, sizeof(c->net.iface_how), "%s", how);
	}
	if (iface_loopback(c, c->id.nnodes, "", f))
		return -1;
	/* Every other node's prober connects at once: a short backlog drops
	 * SYNs, which come back only after a 1 s retransmission. */
	c->net.data_fd = de_listen(&c->net.data_addr, 4096, &e);
	if (c->net.data_fd < 0)
		return de_fail_set(f, DE_D_USAGE, "data listener on %s (by %s; DISTENV_SOCKET_IFNAME picks another): %s",
				   c->net.iface, c->net.iface_how, e.msg);
	c->net.probe_fd = de_listen_probe(&c->net.data_addr, &c->net.probe_port, &e);
	if (c->net.probe_fd < 0)
		return de_fail_set(f, DE_D_USAGE, "probe listener on %s (by %s; DISTENV_SOCKET_IFNAME picks another): %s",
				   c->net.iface, c->net.iface_how, e.msg);
	return 0;
}

/* The backends this distenv-check was built with, in auto's order of
 * preference. */
static const struct de_backend_ops *const backends[] = {
#ifdef HAVE_NCCL
	&de_nccl_backend,
#endif
	&de_socket_backend,
};
#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))

/* With --verbose, the backend picked, on what, and why. */
static void say_backend(const struct de_check *c, const char *passed_over)
{
	char who[32], what[1200] = "";

	if (!c->o.verbose)
		return;
	snprintf(who, sizeof(who), "rank %u", c->id.rank);
	if (c->be->describe != NULL)
		c->be->describe(what, sizeof(what));
	de_log(who, "backend %s%s, device %s%s%s%s%s", c->be->name,
	       c->o.backend == DE_BACKEND_AUTO ? " (auto)" : "", c->device,
	       what[0] ? ", " : "", what, passed_over[0] ? "; " : "", passed_over);
}

/* --backend=auto takes the first usable one; a named one must be built. */
static int choose_backend(struct de_check *c, struct de_fail *f)
{
	char passed_over[DE_ERR_MAX + 64] = "";
	struct de_err why;
	size_t i;

	for (i = 0; i < NBACKENDS; i++) {
		if (c->o.backend == DE_BACKEND_AUTO) {
			if (!backends[i]->usable(&why)) {
				/* The first one passed over is the one wanted. */
				if (passed_over[0] == '\0')
					snprintf(passed_over, sizeof(passed_over), "not %s: %s",
						 backends[i]->name, why.msg);
				continue;
			}
		} else if (backends[i]->id != c->o.backend) {
			continue;
		}
		c->be = backends[i];
		if (c->be->select(c, f))
			return -1;
		say_backend(c, passed_over);
		return 0;
	}
	if (c->o.backend == DE_BACKEND_NCCL)
		return de_fail_set(f, DE_D_USAGE, "--backend=nccl: this distenv-check was built without CUDA/NCCL headers");
	/* The socket backend is always built and always usable. */
	return de_fail_set(f, DE_D_INTERNAL, "no backend for --backend (%d)", (int)c->o.backend);
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

		de_fill_input(t, buf, count, c->id.rank, c->id.world);
		if (c->be->allreduce(c, buf, count, t, &us, f))
			return -1;
		if (i >= warmup)
			total += us;
	}
	*usec = iters > 0 ? total / iters : 0;
	return (long)de_verify_sum(t, buf, count, c->id.world);
}

/* The figure every rank line shows, the allreduce of rank+1: element 0
 * of the check's own buffer where its sum N(N+1)/2 is exact in the dtype,
 * else one more allreduce, of an int64 (exact at any N). */
static int rank_sum(struct de_check *c, const void *buf, size_t count, int64_t *got,
		    struct de_fail *f)
{
	double us;

	if (count > 0 && de_fill_has_rank_sum(c->o.dtype, c->id.world)) {
		*got = (int64_t)de_value_at(c->o.dtype, buf, 0);
		return 0;
	}
	*got = (int64_t)c->id.rank + 1;
	return c->be->allreduce(c, got, 1, DE_I64, &us, f);
}

static int check_mode(struct de_check *c, size_t count, struct de_fail *f)
{
	enum de_dtype t = c->o.dtype;
	void *buf = malloc(count * de_dtype_size(t));
	char line[512];
	double us = 0;
	int64_t got, want = (int64_t)de_rank_sum(c->id.world), t0 = de_now_ms();
	long wrong;

	if (buf == NULL)
		return de_fail_set(f, DE_D_INTERNAL, "out of memory for %zu elements", count);
	wrong = run_collective(c, buf, count, 1, 0, &us, f);
	if (wrong < 0 || rank_sum(c, buf, count, &got, f)) {
		free(buf);
		return de_rdv_report_failure(c, f); /* rank 0 answers with the job's verdict */
	}
	free(buf);
	c->net.check_ms = (double)(de_now_ms() - t0);
	if (got != want)
		wrong++;
	de_report_rank(c, count, got, want, wrong, line, sizeof(line));
	if (de_rdv_phase(c, wrong ? DE_D_WRONG_RESULT : DE_OK, (uint64_t)wrong,
			 wrong ? line : "", NULL, 0, f))
		return -1;
	return 0; /* rank 0's PASS: main, once the summary is written */
}

/* The bench size after bytes (times --stepfactor), 0 past MAX: as
 * nccl-tests, the sweep ends on the last size that does not pass MAX. */
static size_t next_size(const struct de_check *c, size_t bytes)
{
	if (bytes > c->o.max_bytes / c->o.factor)
		return 0;
	return bytes * c->o.factor;
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
	struct de_bench table = { NULL, 0, 0, 0 };

	if (buf == NULL)
		return de_fail_set(f, DE_D_INTERNAL, "out of memory for %zu bytes", c->o.max_bytes);
	for (bytes = c->o.min_bytes; bytes != 0; bytes = next_size(c, bytes)) {
		size_t count = bytes / esz;
		double us = 0;
		long wrong;
		char text[128];

		if (c->id.rank == 0 && !c->o.quiet && bytes >= (16u << 20))
			de_log("rank 0", "bench %zu bytes...", bytes);
		wrong = run_collective(c, buf, count, c->o.iters, c->o.warmup, &us, f);
		if (wrong < 0) {
			free(buf);
			free(table.row);
			return de_rdv_report_failure(c, f);
		}
		snprintf(text, sizeof(text), "%ld wrong of %zu at %zu bytes", wrong, count, bytes);
		if (de_rdv_phase(c, wrong ? DE_D_WRONG_RESULT : DE_OK, (uint64_t)wrong,
				 wrong ? text : "", NULL, 0, f)) {
			free(buf);
			free(table.row);
			return -1;
		}
		if (c->id.rank == 0)
			de_bench_row(c, &table, count, us, wrong);
	}
	if (c->id.rank == 0)
		de_bench_end(c, &table);
	free(table.row);
	free(buf);
	return 0;
}

static int count_sizes(const struct de_check *c)
{
	size_t b;
	int n = 0;

	for (b = c->o.min_bytes; b != 0; b = next_size(c, b))
		n++;
	return n;
}

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

/* --pairs after the join: the probe (a failure goes into the verdict),
 * the sweep, rank 0's report. 0 clean, 1 pairs failed, -1 f. */
static int pairs_mode(struct de_check *c, struct de_fail *f)
{
	char report[2048];
	struct de_err e;
	int probe, rc;

	/* --pairs-out's folder and gnuplot: rank 0 saw to them in setup. */
	if (de_pairs_prepare(c, f))
		return de_rdv_report_failure(c, f);
	probe = de_probe_nodes(c, f, report, sizeof(report));
	rc = de_pairs_run(c, probe, report, f);
	if (rc < 0 || c->id.rank != 0)
		return rc;
	de_pairs_report(c);
	if (c->o.pairs_out != NULL && de_pairs_write(c, &e)) {
		de_log("rank 0", "%s", e.msg);
		return 1;
	}
	return rc;
}

/* Why this run measures no NCCL pairs: the socket sweep runs anywhere. */
static void nccl_pairs_skip(struct de_check *c)
{
	char *out = c->pairs->nccl_skip;
	size_t len = sizeof(c->pairs->nccl_skip);
#ifdef HAVE_NCCL
	struct de_err why;

	if (!de_nccl_backend.usable(&why))
		snprintf(out, len, "the NCCL backend is not usable on this node: %s", why.msg);
	else
		snprintf(out, len, "NCCL is usable here, but this build sweeps over sockets only");
#else
	snprintf(out, len, "this distenv-check was built without CUDA/NCCL headers");
#endif
}

/* Everything a rank does alone before it meets rank 0. *tell is set
 * once rank 0 can hear of a failure: we know who we are, can prove it,
 * and know where rank 0 is. */
static int setup(struct de_check *c, struct de_fail *f, int *tell)
{
	struct de_err e;

	*tell = 0;
	if (read_env(c, f))
		return -1;
	if (de_dtype_world_ok(c->o.dtype, c->id.world, &e) < 0)
		return de_fail_set(f, DE_D_USAGE, "WORLD_SIZE=%u and --dtype=%s: %s", c->id.world,
				   de_dtype_name(c->o.dtype), e.msg);
	if (de_auth_init(&c->auth, c->id.token, c->id.rank, c->o.insecure, f))
		return -1;
	if (de_resolve(c->id.master, c->id.master_port, &c->net.master_addr, &e))
		return de_fail_set(f, DE_D_MASTER_RESOLVE, "MASTER_ADDR: %s", e.msg);
	*tell = 1;
	if (outputs_ready(c, f) || choose_backend(c, f) || preflight(c, f) || de_acceptor_start(c, f))
		return -1;
	if (c->id.rank == 0) {
		expect_hosts(c);
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
	char report[2048];
	int64_t t;

	if ((c->id.rank == 0 && de_rdv_server_start(c, f)) || de_rdv_join(c, f))
		return -1;
	if (joined_checks(c, f))
		return de_rdv_report_failure(c, f);
	if (c->o.pairs)
		return pairs_mode(c, f);
	/* Phase 0: every pair of nodes, both directions, as NCCL/gloo will. */
	t = de_now_ms();
	if (de_probe_nodes(c, f, report, sizeof(report)) != 0)
		return de_rdv_report_failure(c, f);
	if (de_rdv_phase(c, DE_OK, 0, "", NULL, 0, f))
		return -1;
	c->net.probe_ms = (double)(de_now_ms() - t);
	t = de_now_ms();
	if (c->be->init(c, f))
		return de_rdv_report_failure(c, f);
	c->net.connect_ms = (double)(de_now_ms() - t);
	return c->o.bench ? bench_mode(c, f) : check_mode(c, count, f);
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
	c.net.rdv_fd = c.net.data_fd = c.net.probe_fd = c.ring.left_fd = c.ring.right_fd = -1;
	/* First: every failure line names the node, even a broken environment's. */
	if (gethostname(c.id.host, sizeof(c.id.host)) != 0)
		snprintf(c.id.host, sizeof(c.id.host), "?");
	if (parse_opts(&c, argc, argv, &count, &e))
		return de_usage_error("distenv-check", "%s", e.msg);
	c.deadline = t0 + (int64_t)c.o.timeout_s * 1000;
	if (c.o.pairs) {
		/* The sweep runs over sockets on every node (the NCCL one is
		 * named skipped, with why). */
		c.pairs = &pairs;
		nccl_pairs_skip(&c);
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
	c.nphases = 1 + (c.o.bench ? count_sizes(&c) : 1);
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
