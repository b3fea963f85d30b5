/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv-check's one error idiom. A function that fails fills a
 * struct de_fail (the diagnosis and one sentence about this instance of
 * it) and returns -1: `return de_fail_set(f, DE_D_..., "...", ...)`.
 * Side remarks that are not the verdict go through de_log. Pure helpers
 * below this level use src/lib's struct de_err, and their callers turn it
 * into a de_fail with the diagnosis that fits. */
#ifndef DISTENV_CHECK_FAIL_H
#define DISTENV_CHECK_FAIL_H

#include "diag.h"
#include "err.h"

struct de_fail {
	enum de_diag diag;
	int from_rank0; /* the job's verdict from rank 0, not our own view */
	char msg[DE_ERR_MAX + 256];
	/* The nodes the verdict blames (a hostlist expression, exclude.h),
	 * "" when none; exclude_sure 0 when which one is not known. */
	char exclude[256];
	int exclude_sure;
};

int de_fail_set(struct de_fail *f, enum de_diag d, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One line on stderr, "distenv-check: WHO: ...": what rank 0's server or
 * a data port turned away, which never changes the verdict. */
void de_log(const char *who, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
