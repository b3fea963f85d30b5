/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The run after the join (modes.c), one mode per run: the check, --bench
 * or --pairs. Each returns 0 clean, -1 with f; rank 0 prints the result. */
#ifndef DISTENV_CHECK_MODES_H
#define DISTENV_CHECK_MODES_H

#include <stddef.h>

#include "check.h"

/* One allreduce of count elements, verified, and this rank's line. */
int de_check_mode(struct de_check *c, size_t count, struct de_fail *f);
/* --bench: the size sweep; rank 0 prints the table. */
int de_bench_mode(struct de_check *c, struct de_fail *f);
/* --bench's number of sizes, MIN to MAX by --stepfactor. */
int de_count_sizes(const struct de_check *c);
/* --pairs: the probe, the sweep, rank 0's report; 1 when pairs failed. */
int de_pairs_mode(struct de_check *c, struct de_fail *f);
/* Whether this node's leader measures NCCL pairs (c->pairs->nccl_on),
 * and why not, into c->pairs->nccl_skip. */
void de_nccl_pairs_skip(struct de_check *c);

#endif
