/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "budget.h"

int64_t de_budget_by(int64_t now, int64_t ms, int64_t deadline)
{
	return now + ms < deadline ? now + ms : deadline;
}

/* ", ... (4294967295 more)" and its NUL. */
#define TAIL_ROOM 25

void de_cutlist_init(struct de_cutlist *l, char *out, size_t len)
{
	l->out = out;
	l->len = len;
	l->off = 0;
	l->shown = l->more = 0;
	if (len > 0)
		out[0] = '\0';
}

void de_cutlist_add(struct de_cutlist *l, const char *item)
{
	size_t need = strlen(item) + (l->shown ? 2 : 0);

	if (l->more == 0 && l->len > TAIL_ROOM && l->off + need < l->len - TAIL_ROOM) {
		l->off += (size_t)snprintf(l->out + l->off, l->len - l->off, "%s%s",
					   l->shown ? ", " : "", item);
		l->shown++;
		return;
	}
	l->more++;
}

const char *de_cutlist_end(struct de_cutlist *l)
{
	if (l->more > 0 && l->len > TAIL_ROOM)
		snprintf(l->out + l->off, l->len - l->off, "%s... (%u more)",
			 l->shown ? ", " : "", l->more);
	return l->out;
}
