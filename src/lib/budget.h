/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv-check's --timeout=T is one budget for a rank's whole run,
 * counted from its start: every wait ends by start + T, except the wait
 * for the reply that carries rank 0's verdict, which gets a stated slack
 * more. The man page's worst case (T + 3 s to exit) is the sum below. */
#ifndef DISTENV_BUDGET_H
#define DISTENV_BUDGET_H

#include <stddef.h>
#include <stdint.h>

/* Rank 0 judges this long after its own budget ends: the others' own
 * failure reports, sent at the end of theirs, reach it first. */
#define DE_BUDGET_JUDGE_MS 1000
/* A rank waits this long past its budget for rank 0's verdict (which
 * comes DE_BUDGET_JUDGE_MS past rank 0's). */
#define DE_BUDGET_VERDICT_MS 2000
/* Teardown after the verdict (NCCL's finalize) ends by this much more. */
#define DE_BUDGET_TEARDOWN_MS 1000
/* Every rank outwaits rank 0's judging, or it would miss the verdict. */
_Static_assert(DE_BUDGET_VERDICT_MS > DE_BUDGET_JUDGE_MS,
	       "a rank must wait for rank 0's verdict longer than rank 0 takes to judge");

/* The end of a wait that wants ms from now, within the budget's end:
 * min(now + ms, deadline). */
int64_t de_budget_by(int64_t now, int64_t ms, int64_t deadline);

/* A comma list of items cut at an item boundary: what does not fit in
 * len (the tail's room kept) is counted, and de_cutlist_end says
 * ", ... (N more)". out is always a whole string. */
struct de_cutlist {
	char *out;
	size_t len, off;
	uint32_t shown, more;
};

void de_cutlist_init(struct de_cutlist *l, char *out, size_t len);
/* Appends item, or counts it once one did not fit (order is kept: no
 * later, shorter item slips in after a cut). */
void de_cutlist_add(struct de_cutlist *l, const char *item);
/* Appends the tail when items were cut; returns out. */
const char *de_cutlist_end(struct de_cutlist *l);

#endif
