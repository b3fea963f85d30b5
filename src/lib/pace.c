/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include "pace.h"

int de_pace_pure_spin(int own_cpu, unsigned long switches)
{
	return own_cpu && switches < DE_PACE_SHARED_SWITCHES;
}

size_t de_pace_send_max(size_t span, unsigned mss, size_t chunk)
{
	if (mss > 0 && mss < DE_PACE_SMALL_MSS && span > DE_PACE_BIG_SPAN &&
	    DE_PACE_SEND_PIECE < chunk)
		return DE_PACE_SEND_PIECE;
	return chunk;
}
