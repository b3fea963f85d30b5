/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a rank runs once it has joined: the check (one allreduce,
 * verified), --bench (the size sweep) or --pairs (the pair matrix).
 * Each reports through the rendezvous; rank 0 prints the job's result. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "backend.h"
#include "check.h"
#include "modes.h"
#include "pairs.h"
#include "pairs_report.h"
#include "rendezvous.h"
#include "report.h"
#include "socket.h"

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

int de_check_mode(struct de_check *c, size_t count, struct de_fail *f)
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
			 wrong ? line : "", f))
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

int de_bench_mode(struct de_check *c, struct de_fail *f)
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
				 wrong ? text : "", f)) {
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

int de_count_sizes(const struct de_check *c)
{
	size_t b;
	int n = 0;

	for (b = c->o.min_bytes; b != 0; b = next_size(c, b))
		n++;
	return n;
}

/* --pairs after the join: the probe (a failure goes into the verdict),
 * the sweep, rank 0's report. 0 clean, 1 pairs failed, -1 f. */
int de_pairs_mode(struct de_check *c, struct de_fail *f)
{
	static struct de_text probe_rep;
	struct de_err e;
	int probe, rc;

	/* --pairs-out's folder and gnuplot: rank 0 saw to them in setup. */
	if (de_pairs_prepare(c, f))
		return de_rdv_report_failure(c, f);
	probe = de_probe_nodes(c, f, &probe_rep);
	rc = de_pairs_run(c, probe, &probe_rep, f);
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
void de_nccl_pairs_skip(struct de_check *c)
{
	char *out = c->pairs->nccl_skip;
	size_t len = sizeof(c->pairs->nccl_skip);
#ifdef HAVE_NCCL
	struct de_err why;

	if (!de_nccl_backend.usable(&why)) {
		snprintf(out, len, "the NCCL backend is not usable on this node: %s", why.msg);
	} else {
		*out = '\0';
		c->pairs->nccl_on = 1;
	}
#else
	snprintf(out, len, "this distenv-check was built without CUDA/NCCL headers");
#endif
}
