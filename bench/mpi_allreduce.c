/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mpi_allreduce: the Open MPI peer of `distenv-check --bench`, for
 * bench/allreduce. Same options, same timing and the same table:
 *
 *   mpirun -np 2 ... mpi_allreduce --sizes=8:64M --iters=20 --warmup=5
 *   mpirun -np 2 ... mpi_allreduce --plan=8:1M:1000:100,2M:64M:10:2
 *
 * Sizes double from MIN to MAX bytes. Every iteration refills the buffer
 * (untimed) with distenv-check's input, element i of rank r holding
 * (i % 13 + 1) * (r + 1), then times one in-place float32 MPI_SUM
 * MPI_Allreduce with MPI_Wtime; time(us) is rank 0's mean over the timed
 * iterations. #wrong counts rank 0's elements that differ from the exact
 * sum after the last iteration. --plan gives one group per comma,
 * MIN:MAX:ITERS:WARMUP, so one launch covers a whole sweep.
 *
 * Build: mpicc -O2 -Wall -Wextra -Werror -o mpi_allreduce mpi_allreduce.c
 */
#include <mpi.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PERIOD 13
#define MAX_GROUPS 64

struct group {
	size_t min, max;
	long iters, warmup;
};

static int rank, world;

static void die(const char *msg, const char *arg)
{
	if (rank == 0)
		fprintf(stderr, "mpi_allreduce: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
	MPI_Finalize();
	exit(2);
}

/* "64M", "1K", "8": bytes; end is set past the number and suffix. */
static int parse_size(const char *s, size_t *out, const char **end)
{
	char *e;
	unsigned long long v;

	errno = 0;
	if (*s < '0' || *s > '9')
		return -1;
	v = strtoull(s, &e, 10);
	if (errno)
		return -1;
	switch (*e) {
	case 'K': case 'k': v <<= 10; e++; break;
	case 'M': case 'm': v <<= 20; e++; break;
	case 'G': case 'g': v <<= 30; e++; break;
	default: break;
	}
	*out = (size_t)v;
	*end = e;
	return 0;
}

static int parse_long(const char *s, long *out, const char **end)
{
	char *e;

	errno = 0;
	if (*s < '0' || *s > '9')
		return -1;
	*out = strtol(s, &e, 10);
	if (errno || *out < 0)
		return -1;
	*end = e;
	return 0;
}

/* MIN:MAX */
static int parse_range(const char *s, struct group *g)
{
	const char *e;

	if (parse_size(s, &g->min, &e) || *e != ':' || parse_size(e + 1, &g->max, &e) || *e)
		return -1;
	return g->min > g->max ? -1 : 0;
}

/* MIN:MAX:ITERS:WARMUP[,...] */
static int parse_plan(const char *s, struct group *g, int *n)
{
	const char *e = s;

	*n = 0;
	for (;;) {
		if (*n == MAX_GROUPS)
			return -1;
		if (parse_size(e, &g[*n].min, &e) || *e != ':' ||
		    parse_size(e + 1, &g[*n].max, &e) || *e != ':' ||
		    parse_long(e + 1, &g[*n].iters, &e) || *e != ':' ||
		    parse_long(e + 1, &g[*n].warmup, &e) || g[*n].min > g[*n].max)
			return -1;
		(*n)++;
		if (*e == '\0')
			return 0;
		if (*e != ',')
			return -1;
		e++;
	}
}

static const char *opt(const char *arg, const char *name)
{
	size_t n = strlen(name);

	return strncmp(arg, name, n) == 0 && arg[n] == '=' ? arg + n + 1 : NULL;
}

int main(int argc, char **argv)
{
	struct group groups[MAX_GROUPS], one = { 8, 64u << 20, 20, 5 };
	int ngroups = 0, i, printed = 0, g;
	const char *v;
	float *buf, *src;
	size_t maxb = 0, bytes, n, k;
	char version[MPI_MAX_LIBRARY_VERSION_STRING];
	int vlen;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &world);

	for (i = 1; i < argc; i++) {
		if ((v = opt(argv[i], "--sizes")) != NULL) {
			if (parse_range(v, &one))
				die("bad --sizes (want MIN:MAX bytes, K/M/G suffixes)", v);
		} else if ((v = opt(argv[i], "--iters")) != NULL) {
			if (parse_long(v, &one.iters, &v) || *v || one.iters < 1)
				die("bad --iters", argv[i]);
		} else if ((v = opt(argv[i], "--warmup")) != NULL) {
			if (parse_long(v, &one.warmup, &v) || *v)
				die("bad --warmup", argv[i]);
		} else if ((v = opt(argv[i], "--plan")) != NULL) {
			if (parse_plan(v, groups, &ngroups))
				die("bad --plan (want MIN:MAX:ITERS:WARMUP[,...])", v);
		} else if ((v = opt(argv[i], "--dtype")) != NULL) {
			if (strcmp(v, "float32") != 0)
				die("only --dtype=float32 is supported", v);
		} else {
			die("unknown argument", argv[i]);
		}
	}
	if (ngroups == 0)
		groups[ngroups++] = one;
	for (g = 0; g < ngroups; g++) {
		if (groups[g].iters < 1)
			die("every group needs at least one timed iteration", NULL);
		if (groups[g].max > maxb)
			maxb = groups[g].max;
	}

	n = maxb / sizeof(float) + 1;
	buf = malloc(n * sizeof(float));
	src = malloc(n * sizeof(float));
	if (buf == NULL || src == NULL)
		die("out of memory", NULL);
	for (k = 0; k < n; k++)
		src[k] = (float)((k % PERIOD + 1) * (size_t)(rank + 1));
	MPI_Get_library_version(version, &vlen);
	version[strcspn(version, ",\n")] = '\0';

	for (g = 0; g < ngroups; g++) {
		for (bytes = groups[g].min; bytes <= groups[g].max;
		     bytes = bytes ? bytes * 2 : sizeof(float)) {
			size_t count = bytes / sizeof(float);
			double total = 0, t0, us, algbw, busbw;
			long it, wrong = 0, wrong_all = 0;
			double tri = (double)world * (world + 1) / 2;

			for (it = 0; it < groups[g].warmup + groups[g].iters; it++) {
				memcpy(buf, src, count * sizeof(float));
				t0 = MPI_Wtime();
				MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM,
					      MPI_COMM_WORLD);
				if (it >= groups[g].warmup)
					total += MPI_Wtime() - t0;
			}
			for (k = 0; k < count; k++)
				if ((double)buf[k] != (double)(k % PERIOD + 1) * tri)
					wrong++;
			MPI_Reduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
			if (rank == 0) {
				if (!printed++) {
					printf("# mpi_allreduce: %d ranks, %s, float32, MPI_Allreduce in place\n",
					       world, version);
					printf("%12s %12s %8s %6s %12s %12s %12s %8s\n", "size", "count",
					       "type", "redop", "time(us)", "algbw(GB/s)", "busbw(GB/s)",
					       "#wrong");
				}
				us = total / (double)groups[g].iters * 1e6;
				algbw = us > 0 ? (double)bytes / us / 1e3 : 0;
				busbw = algbw * 2.0 * (world - 1) / world;
				printf("%12zu %12zu %8s %6s %12.1f %12.3f %12.3f %8ld\n",
				       count * sizeof(float), count, "float32", "sum", us, algbw,
				       busbw, wrong_all);
				fflush(stdout);
			}
		}
	}
	free(buf);
	free(src);
	MPI_Finalize();
	return 0;
}
