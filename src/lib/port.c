/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include "port.h"

int de_port_range_check(unsigned long min, unsigned long max,
			struct de_err *err)
{
	if (min < 1024 || max > 65535 || min > max)
		return de_errf(err, "port range %lu-%lu: expected 1024 <= port_min <= port_max <= 65535",
			       min, max);
	return 0;
}

static uint32_t step_slot(uint32_t step_id, uint32_t range)
{
	/* Special steps count down from the top of the range. */
	if (step_id >= DE_STEP_SPECIAL_MIN)
		return range - 1 - ((0xFFFFFFFFu - step_id) % range);
	return step_id % range;
}

uint16_t de_port_for(uint32_t job_id, uint32_t step_id, uint16_t min,
		     uint16_t max)
{
	uint32_t range = (uint32_t)max - min + 1;
	/* Knuth's multiplicative hash, then a final mix: consecutive job ids
	 * (arrays, bursts of submissions) land far apart. */
	uint32_t h = job_id * 2654435761u;

	h ^= h >> 16;
	h *= 0x45d9f3bu;
	h ^= h >> 16;
	return (uint16_t)(min + (h % range + step_slot(step_id, range)) % range);
}
