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
/* Rank 0, one bench size (the header before the first). */
void de_report_bench_row(const struct de_check *c, int first, size_t count,
			 double usec, long wrong);

#endif
