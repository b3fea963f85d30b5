/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the ring's unit tests share (test-ring.c, the schedule;
 * test-ring-values.c, the dtypes, limits and kernels). */
#ifndef DISTENV_TEST_RING_H
#define DISTENV_TEST_RING_H

#include <stdio.h>
#include <stdlib.h>

#include "ring.h"

static const enum de_dtype all_dtypes[DE_DTYPE_COUNT] = {
	DE_F32, DE_F64, DE_I32, DE_I64
};

static inline void *xcalloc(size_t n, size_t size)
{
	/* calloc(0, ...) may return NULL; one byte keeps "NULL = failed". */
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL) {
		printf("Bail out! out of memory\n");
		exit(1);
	}
	return p;
}

static inline unsigned char *elem(void *buf, enum de_dtype t, size_t i)
{
	return (unsigned char *)buf + i * de_dtype_size(t);
}

#endif
