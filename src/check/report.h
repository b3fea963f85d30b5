/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What distenv-check prints: a rank's line (text or JSON), a failure, the
 * job's PASS line and the bench table. Nothing here talks to anyone. */
#ifndef DISTENV_REPORT_H
#define DISTENV_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "check.h"

/* This rank's failure, with the diagnosis's hint. */
void de_report_fail(const struct de_check *c, const struct de_fail *f);
/* This rank's checklist line: got is the allreduce of rank+1; (to stdout unless --quiet and OK); the text
 * form also goes to line, for rank 0's verdict when it is wrong. */
void de_report_rank(const struct de_check *c, size_t count, int64_t got,
		    int64_t want, long wrong, char *line, size_t len);
/* Rank 0, every rank verified. */
void de_report_pass(const struct de_check *c, size_t count);
/* Rank 0's bench table, nccl-tests style (or one JSON document with
 * --json at the end): a row per size, then the average bus bandwidth. */
struct de_bench_row {
	size_t bytes, count;
	double usec, algbw, busbw;
	long wrong;
};
struct de_bench {
	struct de_bench_row *row; /* the caller frees it */
	size_t n, cap, printed;
};
void de_bench_row(const struct de_check *c, struct de_bench *b, size_t count,
		  double usec, long wrong);
void de_bench_end(const struct de_check *c, struct de_bench *b);

/* Rank 0's job-level verdict for CI, written whole to path (a temporary
 * file renamed into place): f NULL or DE_OK for a pass. */
/* Before the rendezvous: 0 when --json-summary's FILE can be written (a
 * new file can be made beside it, for the one renamed onto it, and FILE
 * is no folder); else -1, err naming FILE and why. */
int de_report_summary_ready(const char *path, struct de_err *err);
int de_report_summary(const struct de_check *c, const char *path, const struct de_fail *f,
		      size_t count, double elapsed_ms, struct de_err *err);

#endif
