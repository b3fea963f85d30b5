/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv-check's command line: --help, and every option read into
 * struct de_opts and checked, alone and together, before anything else
 * runs, so a bad one is a usage error (exit status 2). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "opterr.h"
#include "options.h"
#include "pairs.h"
#include "parse.h"
#include "port.h"
#include "secret.h"

#define DEFAULT_COUNT 262147 /* ~1 MiB of float32, not divisible by small worlds */

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
		"  --node                      this node alone, no peers, no MASTER_*: its name\n"
		"                              resolves to its own non-loopback address, the data\n"
		"                              interface is up, the MASTER_PORT range is outside\n"
		"                              the ephemeral ports, GPUs (if expected) load and\n"
		"                              count right; one line, exit 0 or 1 (for Slurm's\n"
		"                              HealthCheckProgram or Prolog)\n"
		"  --drain                     with --node: on failure drain this node (scontrol,\n"
		"                              Reason=\"distenv: ...\"); on success resume it if,\n"
		"                              and only if, distenv drained it\n"
		"  --port-range=LO-HI          with --node: the plugin's port_min-port_max\n"
		"                              (default %u-%u), or Slurm's MpiParams=ports\n"
		"  --gpus=N                    with --node: the GPUs CUDA must see here (default:\n"
		"                              SLURM_GPUS_ON_NODE, SLURM_JOB_GPUS,\n"
		"                              CUDA_VISIBLE_DEVICES, else with --drain the node's\n"
		"                              Gres; none: no GPU check)\n"
		"  --scontrol=PATH             with --drain (default: scontrol on PATH, else in\n"
		"                              /usr/bin, /usr/local/bin, /usr/sbin, ...)\n"
		"  -h, --help, -V, --version\n"
		"Options take VALUE as --opt=VALUE or --opt VALUE; long names may be\n"
		"shortened while unambiguous.\n\n"
		"Exact at any size: the check's inputs are small integers, exact in float32\n"
		"up to 2^24 ranks and in int32 up to 2^31-1; float64 and int64 at any size.\n"
		"Environment: DISTENV_SOCKET_IFNAME (or GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME)\n"
		"picks the data interface; by default the one that routes to MASTER_ADDR\n"
		"(with --node: the one that holds the address of this node's name).\n",
		DEFAULT_COUNT, DE_PORT_MIN_DEFAULT, DE_PORT_MAX_DEFAULT);
	usage_auth(out);
	fprintf(out,
		"Exit status: 0 every rank verified, 1 the check failed, 2 bad usage or a bad\n"
		"variable, found before the rendezvous. --node: 0 this node passed (and, with\n"
		"--drain, its Slurm state was read and set), 1 it did not. See man distenv-check.\n");
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
	OPT_NODE, OPT_DRAIN, OPT_PORT_RANGE, OPT_GPUS, OPT_SCONTROL,
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

/* The defaults, before the command line. */
static void set_defaults(struct de_check *c, size_t *count)
{
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
	c->o.port_lo = DE_PORT_MIN_DEFAULT;
	c->o.port_hi = DE_PORT_MAX_DEFAULT;
	c->o.gpus = -1;
	*count = DEFAULT_COUNT;
}

/* --drain, --port-range, --gpus, --scontrol: each goes with --node. */
static int parse_node_opt(struct de_check *c, int ch, const char *opt, struct de_err *err)
{
	unsigned long v;

	switch (ch) {
	case OPT_DRAIN:
		c->o.drain = 1;
		break;
	case OPT_PORT_RANGE:
		if (de_port_range_parse(opt, optarg, &c->o.port_lo, &c->o.port_hi, err))
			return -1;
		break;
	case OPT_GPUS:
		if (de_parse_ulong(opt, optarg, 0, 1024, &v, err))
			return -1;
		c->o.gpus = (int)v;
		break;
	case OPT_SCONTROL:
		if (*optarg == '\0')
			return de_errf(err, "--scontrol needs the path of scontrol");
		c->o.scontrol = optarg;
		break;
	}
	return 0;
}

/* The options the node check takes besides its own. */
static int goes_with_node(int ch)
{
	return ch == OPT_BACKEND || ch == OPT_TIMEOUT || ch == OPT_NODE || ch == OPT_DRAIN ||
	       ch == OPT_PORT_RANGE || ch == OPT_GPUS || ch == OPT_SCONTROL;
}

/* -b, -e, -f, --sizes, -n, -w: the bench's sweep. */
static int parse_bench_opt(struct de_check *c, int ch, const char *opt,
			   struct de_err *err)
{
	unsigned long v;

	switch (ch) {
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
	}
	return 0;
}

/* --pair-bytes, --pair-threshold, --pairs-out: each goes with --pairs. */
static int parse_pair_opt(struct de_check *c, int ch, const char *opt,
			  struct de_err *err)
{
	switch (ch) {
	case OPT_PAIR_BYTES:
		if (parse_bytes(opt, optarg, &c->o.pair_bytes, err))
			return -1;
		if (c->o.pair_bytes < PAIR_MIN_BYTES)
			return de_errf(err, "%s \"%s\": expected at least 64K (a smaller transfer measures latency, not bandwidth)",
				       opt, optarg);
		break;
	case OPT_PAIR_THRESHOLD:
		if (parse_fraction(opt, optarg, &c->o.pair_threshold, err))
			return -1;
		break;
	case OPT_PAIRS_OUT:
		if (*optarg == '\0')
			return de_errf(err, "--pairs-out needs a folder name");
		c->o.pairs_out = optarg;
		break;
	}
	return 0;
}

/* What the options say together: -1 with err where they disagree.
 * node_opt: an option of --node's was given; not_node: the first one
 * given that --node does not take (or ""). */
static int opts_agree(const struct de_check *c, int pair_opt, int node_opt, const char *not_node,
		      struct de_err *err)
{
	if (node_opt && !c->o.node)
		return de_errf(err, "--drain, --port-range and --gpus go with --node");
	if (c->o.scontrol != NULL && !c->o.drain)
		return de_errf(err, "--scontrol goes with --node --drain");
	if (c->o.node && not_node[0] != '\0')
		return de_errf(err, "%s and --node: the node check takes only --drain, --port-range, --gpus, --scontrol, --backend and --timeout",
			       not_node);
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

int de_parse_opts(struct de_check *c, int argc, char **argv,
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
		{ "node", no_argument, NULL, OPT_NODE },
		{ "drain", no_argument, NULL, OPT_DRAIN },
		{ "port-range", required_argument, NULL, OPT_PORT_RANGE },
		{ "gpus", required_argument, NULL, OPT_GPUS },
		{ "scontrol", required_argument, NULL, OPT_SCONTROL },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	char name[32], not_node[32] = "";
	int ch, idx, pair_opt = 0, node_opt = 0;

	set_defaults(c, count);
	opterr = 0;
	for (idx = -1; (ch = getopt_long(argc, argv, ":hvVd:b:e:f:n:w:", longopts, &idx)) != -1; idx = -1) {
		const char *opt = opt_name(longopts, ch, idx, name, sizeof(name));

		if (ch != 'h' && ch != 'V' && ch != ':' && ch != '?' && !goes_with_node(ch) &&
		    not_node[0] == '\0')
			snprintf(not_node, sizeof(not_node), "%s", opt);
		switch (ch) {
		case OPT_BACKEND:
			/* "off" is the launchers' word for running no check. */
			if (de_backend_parse(optarg, &c->o.backend) || c->o.backend == DE_BACKEND_OFF)
				return de_errf(err, "--backend \"%s\": expected auto, socket or nccl", optarg);
			break;
		case OPT_TIMEOUT:
			if (de_parse_ulong("--timeout", optarg, 1, 86400, &v, err))
				return -1;
			c->o.timeout_s = (int)v;
			c->o.timeout_given = 1;
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
		case 'e':
		case 'f':
		case OPT_SIZES:
		case 'n':
		case 'w':
			if (parse_bench_opt(c, ch, opt, err))
				return -1;
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
		case OPT_PAIR_THRESHOLD:
		case OPT_PAIRS_OUT:
			if (parse_pair_opt(c, ch, opt, err))
				return -1;
			pair_opt = 1;
			break;
		case OPT_NODE:
			c->o.node = 1;
			break;
		case OPT_DRAIN:
		case OPT_PORT_RANGE:
		case OPT_GPUS:
		case OPT_SCONTROL:
			if (parse_node_opt(c, ch, opt, err))
				return -1;
			node_opt |= ch != OPT_SCONTROL;
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
	return opts_agree(c, pair_opt, node_opt, not_node, err);
}
