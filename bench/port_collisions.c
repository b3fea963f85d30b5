/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench/port_collisions.c: how often do two of k steps running at once on
 * one node get the same MASTER_PORT? distenv's de_port_for (src/lib/port.c,
 * linked from the build) next to what people use without it, over job-id
 * streams like a real cluster's, in one table with ratios. A simulation:
 * a fixed seed, so the same numbers on every machine and every run. Built
 * and run by bench/port-collisions; bench/README.md reads the table. */
#include "config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "err.h"
#include "port.h"

#define PROG "bench/port-collisions"
#define TORCHRUN_PORT 29500 /* torchrun's --master_port default */
/* The sbatch recipe MASTER_PORT=$(expr 10000 + $(echo -n $SLURM_JOBID |
 * tail -c 4)): the job id's last 4 digits (all of them below 1000). */
#define RECIPE_BASE 10000u
#define RECIPE_MOD 10000u
#define MAX_JOB_ID 67043328u /* slurm.conf's MaxJobId default */
#define K_MAX 64
#define TRIALS_DEFAULT 10000000u
#define TRIALS_CHECK 200000u
#define SEED_DEFAULT 20261204u
#define RATIO_LIMIT 2.0 /* the targets: distenv at most 2 x uniform */

enum peer { P_DISTENV, P_UNIFORM, P_RECIPE, P_TORCHRUN, P_N };

enum stream {
	S_CONSECUTIVE, /* k jobs j, j+1, ..., j+k-1 (a burst, an array), step 0 each */
	S_WINDOW,      /* k distinct jobs among the last `window` ids, step 0 each */
	S_ONE_JOB,     /* one job, steps 0..k-1 */
	S_MIXED,       /* k/2 distinct jobs among the last `window`, steps 0 and 1 */
};

struct scenario {
	const char *name;
	enum stream stream;
	uint32_t window;
};

static const struct scenario scenarios[] = {
	{ "consecutive", S_CONSECUTIVE, 0 },
	{ "window-1000", S_WINDOW, 1000 },
	{ "window-10000", S_WINDOW, 10000 },
	{ "window-100000", S_WINDOW, 100000 },
	{ "one-job", S_ONE_JOB, 0 },
	{ "mixed-2-steps", S_MIXED, 1000 },
};
#define N_SCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

static const unsigned ks[] = { 2, 4, 8, 16, 32, 64 };
#define N_KS (sizeof(ks) / sizeof(ks[0]))

struct row {
	uint64_t hits[P_N]; /* trials in which two steps had one port */
	double birthday;
};

/* splitmix64: small, fast, and the same stream everywhere. */
static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

/* Uniform in [0, n); the modulo's bias is below n / 2^64. */
static uint32_t rng_below(uint32_t n)
{
	return (uint32_t)(rng_next() % n);
}

/* The newest id of a window of `window` ids, all >= 1. */
static uint32_t newest_id(uint32_t window)
{
	return window + rng_below(MAX_JOB_ID - window + 1);
}

/* n distinct ids among the `window` ids up to newest (n <= window). */
static void distinct_ids(uint32_t *id, unsigned n, uint32_t window)
{
	uint32_t newest = newest_id(window);
	unsigned i, j;

	for (i = 0; i < n; i++) {
	again:
		id[i] = newest - rng_below(window);
		for (j = 0; j < i; j++)
			if (id[j] == id[i])
				goto again;
	}
}

/* The k steps (job, step) of one trial. */
static void draw_steps(const struct scenario *s, unsigned k, uint32_t *job,
		       uint32_t *step)
{
	uint32_t ids[K_MAX], first;
	unsigned i;

	switch (s->stream) {
	case S_CONSECUTIVE:
		first = newest_id(k) - (k - 1);
		for (i = 0; i < k; i++) {
			job[i] = first + i;
			step[i] = 0;
		}
		break;
	case S_WINDOW:
		distinct_ids(job, k, s->window);
		for (i = 0; i < k; i++)
			step[i] = 0;
		break;
	case S_ONE_JOB:
		first = newest_id(1);
		for (i = 0; i < k; i++) {
			job[i] = first;
			step[i] = i;
		}
		break;
	case S_MIXED:
		distinct_ids(ids, k / 2, s->window);
		for (i = 0; i < k; i++) {
			job[i] = ids[i / 2];
			step[i] = i % 2;
		}
		break;
	}
}

/* Whether two of the k ports are equal: stamp[port] == gen marks a port
 * taken in this trial (gen is new for every trial). */
static int collides(uint32_t *stamp, const uint16_t *port, unsigned k,
		    uint32_t gen)
{
	unsigned i;

	for (i = 0; i < k; i++) {
		if (stamp[port[i]] == gen)
			return 1;
		stamp[port[i]] = gen;
	}
	return 0;
}

/* 1 - prod_{i<k} (1 - i/n): two of k independent uniform ports in n equal. */
static double birthday(unsigned k, uint32_t n)
{
	double none = 1.0;
	unsigned i;

	for (i = 0; i < k; i++)
		none *= i < n ? 1.0 - (double)i / n : 0.0;
	return 1.0 - none;
}

/* Per peer: the trial (gen) that last took each port. */
static uint32_t taken[P_N][65536];

static void run_row(const struct scenario *s, unsigned k, uint16_t min,
		    uint16_t max, uint64_t trials, struct row *r)
{
	static uint32_t gen;
	uint32_t range = (uint32_t)max - min + 1, job[K_MAX], step[K_MAX];
	uint16_t port[P_N][K_MAX];
	uint64_t t;
	unsigned i, p;

	memset(r, 0, sizeof(*r));
	r->birthday = birthday(k, range);
	for (t = 0; t < trials; t++) {
		if (++gen == 0) {
			memset(taken, 0, sizeof(taken));
			gen = 1;
		}
		draw_steps(s, k, job, step);
		for (i = 0; i < k; i++) {
			port[P_DISTENV][i] = de_port_for(job[i], step[i], min, max);
			port[P_UNIFORM][i] = (uint16_t)(min + rng_below(range));
			port[P_RECIPE][i] = (uint16_t)(RECIPE_BASE + job[i] % RECIPE_MOD);
			port[P_TORCHRUN][i] = TORCHRUN_PORT;
		}
		for (p = 0; p < P_N; p++)
			r->hits[p] += (uint64_t)collides(taken[p], port[p], k, gen);
	}
}

/* A probability as odds in 10,000, with the digits a reader can use. */
static const char *per10k(double p, char *buf, size_t len)
{
	double v = p * 1e4;

	if (p == 0.0)
		snprintf(buf, len, "0");
	else if (v >= 100)
		snprintf(buf, len, "%.0f", v);
	else if (v >= 10)
		snprintf(buf, len, "%.1f", v);
	else if (v >= 0.1)
		snprintf(buf, len, "%.2f", v);
	else
		snprintf(buf, len, "%.3f", v);
	return buf;
}

/* distenv's rate / a peer's: "-" when both are 0, "inf" when only the
 * peer's is, "0" when only distenv's is; 2 significant digits below 0.1. */
static const char *ratio(double mine, double peer, char *buf, size_t len)
{
	if (peer == 0.0)
		snprintf(buf, len, mine == 0.0 ? "-" : "inf");
	else if (mine == 0.0)
		snprintf(buf, len, "0");
	else if (mine / peer < 0.1)
		snprintf(buf, len, "%.2g", mine / peer);
	else
		snprintf(buf, len, "%.2f", mine / peer);
	return buf;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench/port-collisions [--trials N] [--seed N] [--range MIN:MAX] [--check-only]\n"
		"  --trials N       trials per row (default %u)\n"
		"  --seed N         the random stream's seed (default %u)\n"
		"  --range MIN:MAX  distenv's port range, port_min:port_max (default %u:%u)\n"
		"  --check-only     %u trials per row: the test suite's quick run\n",
		TRIALS_DEFAULT, SEED_DEFAULT, DE_PORT_MIN_DEFAULT, DE_PORT_MAX_DEFAULT,
		TRIALS_CHECK);
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	*v = strtoull(s, &end, 10);
	return *end == '\0' ? 0 : -1;
}

static int parse_args(int argc, char **argv, uint64_t *trials, uint64_t *seed,
		      uint16_t *min, uint16_t *max)
{
	struct de_err e;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		unsigned long lo, hi;
		char tail;

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			exit(0);
		} else if (strcmp(a, "--check-only") == 0) {
			*trials = TRIALS_CHECK;
		} else if (strcmp(a, "--trials") == 0 && v) {
			if (parse_u64(v, trials) || *trials == 0)
				return de_usage_error(PROG, "--trials %s: expected a number of trials, 1 or more", v);
			i++;
		} else if (strcmp(a, "--seed") == 0 && v) {
			if (parse_u64(v, seed))
				return de_usage_error(PROG, "--seed %s: expected a number", v);
			i++;
		} else if (strcmp(a, "--range") == 0 && v) {
			if (sscanf(v, "%lu:%lu%c", &lo, &hi, &tail) != 2)
				return de_usage_error(PROG, "--range %s: expected MIN:MAX", v);
			if (de_port_range_check(lo, hi, &e))
				return de_usage_error(PROG, "--range: %s", e.msg);
			*min = (uint16_t)lo;
			*max = (uint16_t)hi;
			i++;
		} else {
			return de_usage_error(PROG, "unknown or incomplete argument: %s", a);
		}
	}
	return 0;
}

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Where and when: the table is the same everywhere, the time is not. */
static void header(void)
{
	struct utsname u;
	char when[32];
	time_t now = time(NULL);

	if (uname(&u) != 0) {
		memset(&u, 0, sizeof(u));
		snprintf(u.sysname, sizeof(u.sysname), "unknown system");
	}
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	printf("# bench/port-collisions: %s %s %s, %ld CPUs, %s\n", u.sysname, u.release,
	       u.machine, sysconf(_SC_NPROCESSORS_ONLN), when);
}

int main(int argc, char **argv)
{
	static struct row rows[N_SCENARIOS][N_KS];
	uint64_t trials = TRIALS_DEFAULT, seed = SEED_DEFAULT;
	uint16_t min = DE_PORT_MIN_DEFAULT, max = DE_PORT_MAX_DEFAULT;
	uint32_t range;
	double start = seconds(), worst = 0, rate[P_N];
	const char *worst_at = NULL;
	unsigned s, k, p, worst_k = 0, one_job_hits = 0, one_job_rows = 0;
	int rc;
	char b[P_N + 1][16], x[3][16];

	rc = parse_args(argc, argv, &trials, &seed, &min, &max);
	if (rc)
		return rc;
	range = (uint32_t)max - min + 1;
	rng_state = seed;

	header();
	printf("# P(two of k concurrent steps on one node get one MASTER_PORT), as odds in 10,000\n");
	printf("# %" PRIu64 " trials per row, seed %" PRIu64 "; job ids 1..%u (Slurm's MaxJobId default)\n",
	       trials, seed, MAX_JOB_ID);
	printf("# distenv   de_port_for(job, step, %u, %u) (src/lib/port.c): %u ports\n", min, max, range);
	printf("# uniform   every step an independent uniform port in %u-%u ($RANDOM-style)\n", min, max);
	printf("# recipe    10000 + the job id's last 4 digits (10000-19999), the same for all steps of a job\n");
	printf("# torchrun  %u, torchrun's default, for every step\n", TORCHRUN_PORT);
	printf("# birthday  1 - prod_{i<k}(1 - i/%u): k independent uniform ports, the reference\n", range);
	printf("# x uniform, x birthday, x recipe = distenv's odds / the peer's: below 1, distenv collides less\n");
	printf("# Slurm reserved ports (MpiParams=ports=): 0 in every row, by construction (not simulated)\n");
	printf("%-14s %3s | %8s %8s %8s %8s %8s | %9s %10s %8s | %9s\n", "", "", "distenv", "uniform",
	       "recipe", "torchrun", "birthday", "x uniform", "x birthday", "x recipe", "hits");
	printf("%-14s %3s | %8s %8s %8s %8s %8s | %9s %10s %8s | %9s\n", "scenario", "k", "", "", "", "",
	       "", "", "", "", "distenv");
	for (s = 0; s < N_SCENARIOS; s++) {
		for (k = 0; k < N_KS; k++) {
			struct row *r = &rows[s][k];

			run_row(&scenarios[s], ks[k], min, max, trials, r);
			for (p = 0; p < P_N; p++)
				rate[p] = (double)r->hits[p] / (double)trials;
			printf("%-14s %3u | %8s %8s %8s %8s %8s | %9s %10s %8s | %9" PRIu64 "\n",
			       scenarios[s].name, ks[k], per10k(rate[P_DISTENV], b[0], 16),
			       per10k(rate[P_UNIFORM], b[1], 16), per10k(rate[P_RECIPE], b[2], 16),
			       per10k(rate[P_TORCHRUN], b[3], 16), per10k(r->birthday, b[4], 16),
			       ratio(rate[P_DISTENV], rate[P_UNIFORM], x[0], 16),
			       ratio(rate[P_DISTENV], r->birthday, x[1], 16),
			       ratio(rate[P_DISTENV], rate[P_RECIPE], x[2], 16), r->hits[P_DISTENV]);
			fflush(stdout);
			if (scenarios[s].stream == S_ONE_JOB && ks[k] <= range) {
				one_job_rows++;
				one_job_hits += r->hits[P_DISTENV] > 0;
			}
			if (scenarios[s].stream != S_ONE_JOB && r->hits[P_UNIFORM] > 0 &&
			    (double)r->hits[P_DISTENV] / (double)r->hits[P_UNIFORM] > worst) {
				worst = (double)r->hits[P_DISTENV] / (double)r->hits[P_UNIFORM];
				worst_at = scenarios[s].name;
				worst_k = ks[k];
			}
		}
	}
	printf("# measured in %.1fs\n", seconds() - start);

	printf("\ntargets (PASS/MISS):\n");
	if (one_job_rows == 0)
		printf("  n/a   one job, k steps: distenv never collides: no k <= %u ports\n", range);
	else
		printf("  %s  one job, k steps: distenv never collides: %u of %u rows with a collision\n",
		       one_job_hits == 0 ? "PASS" : "MISS", one_job_hits, one_job_rows);
	for (s = 0; s < N_SCENARIOS; s++) {
		const struct row *r = &rows[s][1]; /* k = 4 */

		if (scenarios[s].stream != S_CONSECUTIVE)
			continue;
		if (r->hits[P_UNIFORM] == 0)
			printf("  n/a   consecutive ids, k=4: distenv <= %.0f x uniform: uniform never collided\n",
			       RATIO_LIMIT);
		else
			printf("  %s  consecutive ids, k=4: distenv <= %.0f x uniform: %.2f x\n",
			       (double)r->hits[P_DISTENV] <= RATIO_LIMIT * (double)r->hits[P_UNIFORM] ? "PASS" : "MISS",
			       RATIO_LIMIT, (double)r->hits[P_DISTENV] / (double)r->hits[P_UNIFORM]);
	}
	if (worst_at == NULL)
		printf("  n/a   every row across jobs: distenv <= %.0f x uniform: uniform never collided\n",
		       RATIO_LIMIT);
	else
		printf("  %s  every row across jobs: distenv <= %.0f x uniform: worst %.2f x (%s, k=%u)\n",
		       worst <= RATIO_LIMIT ? "PASS" : "MISS", RATIO_LIMIT, worst, worst_at, worst_k);
	return 0;
}
