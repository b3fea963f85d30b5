/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "port.h"
#include "tap.h"

/* 1 - prod_{i<k} (1 - i/n): the odds that two of k independent uniform
 * ports among n are equal (the birthday formula). */
static double birthday(unsigned k, uint32_t n)
{
	double none = 1.0;
	unsigned i;

	for (i = 0; i < k; i++)
		none *= 1.0 - (double)i / n;
	return 1.0 - none;
}

/* Collisions of the default range, where jobs meet on one node: k
 * consecutive job ids (a burst of submissions, a job array) and the ids of
 * a busy hour should collide no more than uniformly random ports do
 * (bench/port-collisions measures the odds). The bounds are 2 x the
 * birthday formula's expectation over many windows (about 64 and 53
 * collisions expected): a hash that spreads like random passes by a wide
 * margin (Poisson odds of 2 x the mean are below 1e-9), one that piles
 * consecutive ids onto few ports fails. */
static void test_default_range_spread(void)
{
	const uint16_t min = DE_PORT_MIN_DEFAULT, max = DE_PORT_MAX_DEFAULT;
	const uint32_t range = (uint32_t)max - min + 1, windows = 100000;
	static uint32_t stamp[65536];
	static unsigned short count[65536];
	uint32_t w, job, step, distinct_jobs = 0;
	unsigned long hits = 0, pairs = 0;
	double bound;
	unsigned i;

	/* 100,000 windows of 4 consecutive ids, spread over Slurm's default
	 * MaxJobId (67043328): window w starts at 1 + 661 w. */
	for (w = 0; w < windows; w++) {
		for (i = 0; i < 4; i++) {
			uint16_t p = de_port_for(1 + 661 * w + i, 0, min, max);

			if (stamp[p] == w + 1) {
				hits++;
				break;
			}
			stamp[p] = w + 1;
		}
	}
	bound = 2 * windows * birthday(4, range);
	ok(hits <= bound, "%u windows of 4 consecutive job ids: %lu with a collision, at most %.0f "
	   "(2 x birthday)", windows, hits, bound);

	/* The 1000 ids of a busy hour, step 0 each: pairs on one port. */
	for (job = 3000000; job < 3001000; job++)
		count[de_port_for(job, 0, min, max)]++;
	for (i = min; i <= max; i++)
		if (count[i] > 1)
			pairs += (unsigned long)count[i] * (count[i] - 1) / 2;
	bound = 2 * (1000.0 * 999 / 2) / range;
	ok(pairs <= bound, "1000 consecutive job ids: %lu pairs on one port, at most %.0f "
	   "(2 x pairs / ports)", pairs, bound);

	/* Steps 0..range-1 of one job fill the range: no two alike. */
	for (job = 7; job < 7 + 50 * 1000003u; job += 1000003u) {
		int distinct = 1;

		memset(stamp, 0, sizeof(stamp));
		for (step = 0; step < range; step++) {
			uint16_t p = de_port_for(job, step, min, max);

			if (p < min || p > max || stamp[p])
				distinct = 0;
			stamp[p] = 1;
		}
		distinct_jobs += distinct;
	}
	is_int(distinct_jobs, 50, "50 jobs: steps 0..%u of each on %u distinct ports of %u-%u",
	       range - 1, range, min, max);
}

/* distenv-check --node's --port-range and the kernel's reserved ports. */
static void test_node_ports(void)
{
	struct de_err e;
	uint16_t lo = 0, hi = 0, first = 0;

	ok(de_port_range_parse("--port-range", "20000-29399", &lo, &hi, &e) == 0 && lo == 20000 &&
	   hi == 29399, "--port-range 20000-29399 parses");
	ok(de_port_range_parse("--port-range", "5000-5000", &lo, &hi, &e) == 0 && lo == 5000 &&
	   hi == 5000, "--port-range of one port parses");
	ok(de_port_range_parse("--port-range", "29399-20000", &lo, &hi, &e) == -1,
	   "--port-range inverted rejected");
	is_str(e.msg, "--port-range \"29399-20000\": expected 1024 <= LO <= HI <= 65535",
	       "its error names the input and the rule");
	ok(de_port_range_parse("--port-range", "80-90", &lo, &hi, &e) == -1,
	   "--port-range below 1024 rejected");
	ok(de_port_range_parse("--port-range", "20000", &lo, &hi, &e) == -1,
	   "--port-range without HI rejected");
	is_str(e.msg, "--port-range \"20000\": expected LO-HI, e.g. 20000-29399",
	       "its error says the form");
	ok(de_port_range_parse("--port-range", "20000-70000", &lo, &hi, &e) == -1,
	   "--port-range above 65535 rejected");
	ok(de_port_range_parse("--port-range", "20000-29399x", &lo, &hi, &e) == -1,
	   "--port-range with trailing text rejected");
	ok(de_port_range_parse("--port-range", "", &lo, &hi, &e) == -1, "--port-range empty rejected");

	is_int(de_ports_unreserved("\n", 20000, 20009, &first, &e), 10, "no reserved ports: all 10 unreserved");
	is_int(first, 20000, "the first unreserved is the range's first");
	is_int(de_ports_unreserved("20000-29399\n", 20000, 29399, &first, &e), 0,
	       "the whole range reserved: none unreserved");
	is_int(de_ports_unreserved("30000,20000-20004,20006-29399\n", 20000, 29399, &first, &e), 1,
	       "ranges in any order, one port left out: 1 unreserved");
	is_int(first, 20005, "... and it is named");
	is_int(de_ports_unreserved("", 20000, 20001, &first, &e), 2, "empty text: none reserved");
	ok(de_ports_unreserved("20000-x\n", 20000, 20001, &first, &e) == -1, "a bad list is an error");
	is_str(e.msg, "ip_local_reserved_ports \"20000-x\": expected ports as N or N-M, comma-separated",
	       "its error quotes the text");
	ok(de_ports_unreserved("20009-20000", 20000, 20001, &first, &e) == -1, "an inverted range is an error");
	ok(de_ports_unreserved("20000\n5", 20000, 20001, &first, &e) == -1, "text after the line is an error");
}

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
	test_default_range_spread();
	test_node_ports();
	return tap_done();
}
