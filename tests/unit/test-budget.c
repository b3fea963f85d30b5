/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "budget.h"
#include "tap.h"

int main(void)
{
	struct de_cutlist l;
	char out[64], item[16], big[700];
	uint32_t i;

	is_int(de_budget_by(1000, 500, 5000), 1500, "a wait shorter than the budget keeps its own end");
	is_int(de_budget_by(1000, 9000, 5000), 5000, "a longer one ends with the budget");
	is_int(de_budget_by(6000, 500, 5000), 5000, "past the budget: the budget's end (already due)");

	de_cutlist_init(&l, out, sizeof(out));
	is_str(de_cutlist_end(&l), "", "no items: empty");
	de_cutlist_init(&l, out, sizeof(out));
	de_cutlist_add(&l, "3");
	de_cutlist_add(&l, "5");
	is_str(de_cutlist_end(&l), "3, 5", "items that fit: all, comma separated, no ellipsis");

	/* 64 bytes: 25 kept for the tail, so "1, 2, ..." up to 38. */
	de_cutlist_init(&l, out, sizeof(out));
	for (i = 1000; i < 2024; i++) {
		snprintf(item, sizeof(item), "%u", i);
		de_cutlist_add(&l, item);
	}
	de_cutlist_end(&l);
	is_str(out, "1000, 1001, 1002, 1003, 1004, 1005, ... (1018 more)",
	       "cut at a rank boundary, with an ellipsis and how many more");
	is_int(l.shown + l.more, 1024, "every item shown or counted");
	ok(strlen(out) < sizeof(out), "fits its buffer");

	/* An item too long to fit is counted, and a shorter one after it
	 * is not shown out of order. */
	de_cutlist_init(&l, out, sizeof(out));
	de_cutlist_add(&l, "7");
	de_cutlist_add(&l, "this item is far too long to fit in what is left");
	de_cutlist_add(&l, "9");
	is_str(de_cutlist_end(&l), "7, ... (2 more)", "order kept after a cut");

	de_cutlist_init(&l, out, sizeof(out));
	de_cutlist_add(&l, "this item is far too long to fit in what is left");
	is_str(de_cutlist_end(&l), "... (1 more)", "nothing fits: only the count");

	/* The missing-ranks case: a large world, items with where they
	 * were expected; the cut never splits a number. */
	de_cutlist_init(&l, big, 700);
	for (i = 0; i < 4096; i += 2) {
		char it[64];

		snprintf(it, sizeof(it), "%u (expected on node%u)", i, i / 8);
		de_cutlist_add(&l, it);
	}
	de_cutlist_end(&l);
	ok(strlen(big) < 700, "a 2048-item list stays within its 700 bytes");
	{
		const char *tail = strstr(big, ", ... (");
		uint32_t more = 0;

		ok(tail != NULL && sscanf(tail, ", ... (%u more)", &more) == 1 && more == l.more,
		   "ends with the ellipsis and the count (%u)", l.more);
		ok(tail != NULL && tail > big && tail[-1] == ')', "the last item shown is whole");
	}
	return tap_done();
}
