/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "port.h"
#include "tap.h"

int main(void)
{
	struct de_err e;
	uint32_t job, step;
	int in_range = 1, steps_distinct = 1, deterministic = 1;
	static unsigned char seen[65536];
	unsigned collisions = 0;

	ok(de_port_range_check(20000, 29999, &e) == 0, "default range valid");
	ok(de_port_range_check(5000, 5000, &e) == 0, "one-port range valid");
	ok(de_port_range_check(30000, 20000, &e) == -1, "inverted range rejected");
	is_str(e.msg, "port range 30000-20000: expected 1024 <= port_min <= port_max <= 65535",
	       "range error names both ends");
	ok(de_port_range_check(80, 2000, &e) == -1, "privileged ports rejected");
	ok(de_port_range_check(2000, 70000, &e) == -1, "above 65535 rejected");

	for (job = 1; job < 2000; job += 7) {
		uint16_t first = de_port_for(job, 0, 20000, 29999);

		for (step = 0; step < 64; step++) {
			uint16_t p = de_port_for(job, step, 20000, 29999);

			if (p < 20000 || p > 29999)
				in_range = 0;
			if (p != de_port_for(job, step, 20000, 29999))
				deterministic = 0;
			if (step > 0 && p == first)
				steps_distinct = 0;
		}
		if (de_port_for(job, DE_STEP_BATCH, 20000, 29999) == first ||
		    de_port_for(job, DE_STEP_INTERACTIVE, 20000, 29999) == first)
			steps_distinct = 0;
	}
	ok(in_range, "ports stay inside the range");
	ok(deterministic, "same job and step -> same port");
	ok(steps_distinct, "steps (incl. batch/interactive) of a job get distinct ports");

	/* Concurrent steps 0..N of one job never collide while N < range. */
	{
		int distinct = 1;

		for (step = 0; step < 1000; step++) {
			uint16_t p = de_port_for(12345, step, 20000, 20999);

			if (seen[p]++)
				distinct = 0;
		}
		ok(distinct, "1000 steps of one job fill a 1000-port range without collision");
	}

	/* Consecutive job ids (arrays, bursts) spread out. */
	for (job = 1000; job < 1100; job++) {
		uint16_t a = de_port_for(job, 0, 20000, 29999);
		uint16_t b = de_port_for(job + 1, 0, 20000, 29999);

		if (abs((int)a - (int)b) < 2)
			collisions++;
	}
	ok(collisions == 0, "consecutive job ids land on non-adjacent ports (%u near misses)",
	   collisions);
	is_int(de_port_for(7, 3, 4000, 4000), 4000, "single-port range always gives that port");
	ok(de_port_for(0xFFFFFFFFu, 0xFFFFFFFBu, 1024, 65535) >= 1024, "extremes stay in range");
	return tap_done();
}
