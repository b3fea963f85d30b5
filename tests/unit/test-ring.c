/* SPDX-License-Identifier: GPL-2.0-or-later */
/* src/lib/ring.c's schedule: segments, indices, every contribution, the
 * whole ring simulated in memory (test-ring-values.c: dtypes, limits,
 * kernels). */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ring-test.h"
#include "tap.h"

/* ---- segments --------------------------------------------------------- */

static int check_segments(size_t count, uint32_t n)
{
	size_t next = 0, rem = count % n;
	uint32_t s;

	for (s = 0; s < n; s++) {
		struct de_seg g;
		size_t want_len = count / n + (s < rem);

		de_ring_segment(count, n, s, &g);
		if (g.off != next || g.len != want_len) {
			printf("# count %zu n %u seg %u: got off %zu len %zu, want off %zu len %zu\n",
			       count, n, s, g.off, g.len, next, want_len);
			return 0;
		}
		next += g.len;
	}
	if (next != count) {
		printf("# count %zu n %u: segments cover %zu elements\n", count, n, next);
		return 0;
	}
	return 1;
}

static void test_segments(void)
{
	static const size_t big[] = { 1000003, 65537, 4099, (size_t)1 << 33 };
	int good = 1;
	size_t count, i;
	uint32_t n;
	struct de_seg g;

	for (count = 0; count <= 200; count++)
		for (n = 1; n <= 20; n++)
			good &= check_segments(count, n);
	for (i = 0; i < sizeof(big) / sizeof(big[0]); i++)
		for (n = 1; n <= 64; n++)
			good &= check_segments(big[i], n);
	ok(good, "segments tile [0,count) in order, lengths differ by <= 1, the first count%%n longer");

	de_ring_segment(5, UINT32_MAX, 4, &g);
	ok(g.off == 4 && g.len == 1, "n = 2^32-1: segment 4 of 5 elements");
	de_ring_segment(5, UINT32_MAX, UINT32_MAX - 1, &g);
	ok(g.off == 5 && g.len == 0, "n = 2^32-1: last segment empty, at the end");
	de_ring_segment(7, 3, 3, &g);
	ok(g.off == 7 && g.len == 0, "s >= n: empty segment at the end");
	de_ring_segment(7, 0, 0, &g);
	ok(g.off == 7 && g.len == 0, "n = 0: empty segment at the end");
}

/* ---- schedule indices ------------------------------------------------- */

static void test_indices(void)
{
	int in_range = 1, agree = 1, owned = 1;
	uint32_t n, r, k, big = UINT32_MAX;

	for (n = 1; n <= 40; n++) {
		for (r = 0; r < n; r++) {
			uint32_t left = (r + n - 1) % n;

			if (de_ring_owned(r, n) != (r + 1) % n)
				owned = 0;
			if (n >= 2 && (de_ring_owned(r, n) != de_ring_rs_recv(r, n, n - 2) ||
				       de_ring_ag_send(r, n, 0) != de_ring_owned(r, n)))
				owned = 0;
			for (k = 0; k + 1 < n; k++) {
				if (de_ring_rs_send(r, n, k) >= n || de_ring_rs_recv(r, n, k) >= n ||
				    de_ring_ag_send(r, n, k) >= n || de_ring_ag_recv(r, n, k) >= n)
					in_range = 0;
				if (de_ring_rs_recv(r, n, k) != de_ring_rs_send(left, n, k) ||
				    de_ring_ag_recv(r, n, k) != de_ring_ag_send(left, n, k))
					agree = 0;
				if (de_ring_rs_send(r, n, k) != (r + n - k) % n ||
				    de_ring_rs_recv(r, n, k) != (r + 2 * n - k - 1) % n ||
				    de_ring_ag_send(r, n, k) != (r + n + 1 - k) % n ||
				    de_ring_ag_recv(r, n, k) != (r + n - k) % n)
					in_range = 0;
			}
		}
	}
	ok(in_range, "indices follow the formulas and stay in [0,n)");
	ok(agree, "each step, a rank receives the segment its left neighbour sends");
	ok(owned, "after reduce-scatter rank r owns (r+1)%%n, the last it received and the first it sends");
	{
		int chain = 1, steps = 1;

		for (n = 2; n <= 40; n++) {
			if (de_ring_stream_steps(n) != 2 * (n - 1))
				steps = 0;
			for (r = 0; r < n; r++) {
				uint32_t left = (r + n - 1) % n;

				if (de_ring_stream_send(r, n, 0) != r)
					chain = 0;
				for (k = 0; k < de_ring_stream_steps(n); k++) {
					if (de_ring_stream_recv(r, n, k) != de_ring_stream_send(left, n, k))
						chain = 0;
					if (k > 0 && de_ring_stream_send(r, n, k) !=
							     de_ring_stream_recv(r, n, k - 1))
						chain = 0;
					if (k < n - 1 && de_ring_stream_recv(r, n, k) != de_ring_rs_recv(r, n, k))
						chain = 0;
					if (k >= n - 1 && de_ring_stream_recv(r, n, k) !=
								  de_ring_ag_recv(r, n, k - (n - 1)))
						chain = 0;
				}
			}
		}
		ok(steps && de_ring_stream_steps(1) == 0 && de_ring_stream_steps(0) == 0,
		   "the stream has 2(n-1) steps, none for one rank");
		ok(chain, "stream: a rank sends at step i+1 what it received at step i, and its own segment first");
	}
	{
		/* Slices tile [0, count) in order, each n segments of
		 * DE_RING_SLICE_SEG_BYTES except a shorter last one. */
		static const size_t counts[] = { 0, 1, 262143, 262144, 262145, 524288, 1000003, 16777216 };
		static const size_t eszs[] = { 4, 8 };
		static const uint32_t ns[] = { 1, 2, 3, 8, 1000 };
		int tiles = 1, sized = 1;
		size_t a, b2, d;

		for (a = 0; a < sizeof(counts) / sizeof(counts[0]); a++)
			for (b2 = 0; b2 < 2; b2++)
				for (d = 0; d < sizeof(ns) / sizeof(ns[0]); d++) {
					size_t cnt = counts[a], esz = eszs[b2], next = 0, q;
					size_t per = (size_t)ns[d] * (DE_RING_SLICE_SEG_BYTES / esz);
					size_t m = de_ring_slice_count(cnt, esz, ns[d]);
					struct de_seg g;

					for (q = 0; q < m; q++) {
						de_ring_slice(cnt, esz, ns[d], q, &g);
						if (g.off != next || g.len == 0)
							tiles = 0;
						if (g.len != per && q + 1 != m)
							sized = 0;
						next = g.off + g.len;
					}
					de_ring_slice(cnt, esz, ns[d], m, &g);
					if (next != cnt || g.off != cnt || g.len != 0)
						tiles = 0;
				}
		ok(tiles, "slices tile the buffer in order, none empty, nothing after the last");
		ok(sized, "every slice but the last has n segments of DE_RING_SLICE_SEG_BYTES");
		is_int((long long)de_ring_slice_count(16777216, 4, 2), 64, "64 MiB of float32 over 2 ranks: 64 slices of 1 MiB");
	}

	/* No 32-bit wraparound near n = 2^32. */
	ok(de_ring_rs_send(big - 1, big, big - 2) == 1 &&
	   de_ring_rs_recv(big - 1, big, big - 2) == 0 &&
	   de_ring_ag_send(big - 1, big, big - 2) == 2 &&
	   de_ring_ag_recv(big - 1, big, big - 2) == 1 &&
	   de_ring_owned(big - 1, big) == 0 &&
	   de_ring_rs_recv(0, big, 0) == big - 1,
	   "indices exact for n = 2^32-1");
	ok(de_ring_rs_send(0, 0, 0) == 0 && de_ring_owned(0, 0) == 0, "n = 0 returns 0");
}

/* Schedule only, at segment level: each rank holds, per segment, the set
 * of ranks whose input it contains. A reduce must add a disjoint set (no
 * input counted twice); in the end every rank holds every input. */
static void test_contributions(void)
{
	uint32_t n, r, k, s;
	int disjoint = 1, owned = 1, complete = 1;
	uint64_t have[40][40], sent[40];

	for (n = 1; n <= 40; n++) {
		uint64_t all = (UINT64_C(1) << n) - 1;

		for (r = 0; r < n; r++)
			for (s = 0; s < n; s++)
				have[r][s] = UINT64_C(1) << r;
		for (k = 0; k + 1 < n; k++) {
			for (r = 0; r < n; r++)
				sent[r] = have[r][de_ring_rs_send(r, n, k)];
			for (r = 0; r < n; r++) {
				uint64_t in = sent[(r + n - 1) % n];
				uint64_t *mine = &have[r][de_ring_rs_recv(r, n, k)];

				if (*mine & in)
					disjoint = 0;
				*mine |= in;
			}
		}
		for (r = 0; r < n; r++)
			if (have[r][de_ring_owned(r, n)] != all)
				owned = 0;
		for (k = 0; k + 1 < n; k++) {
			for (r = 0; r < n; r++)
				sent[r] = have[r][de_ring_ag_send(r, n, k)];
			for (r = 0; r < n; r++)
				have[r][de_ring_ag_recv(r, n, k)] = sent[(r + n - 1) % n];
		}
		for (r = 0; r < n; r++)
			for (s = 0; s < n; s++)
				if (have[r][s] != all)
					complete = 0;
	}
	ok(disjoint, "n = 1..40: reduce-scatter never adds an input twice");
	ok(owned, "n = 1..40: after reduce-scatter rank r holds every input of segment (r+1)%%n");
	ok(complete, "n = 1..40: after allgather every rank holds every input of every segment");
}

/* ---- the ring, simulated in memory ------------------------------------ */

enum phase { REDUCE_SCATTER, ALLGATHER };

/* One phase: every rank copies its send segment out (what goes on the
 * wire) before any rank receives, as with a simultaneous exchange. */
static int run_phase(enum phase ph, enum de_dtype t, uint32_t n, size_t count,
		     void **buf, void **wire)
{
	size_t esz = de_dtype_size(t);
	uint32_t k, r;

	for (k = 0; k + 1 < n; k++) {
		uint32_t *sent_seg = xcalloc(n, sizeof(*sent_seg));
		size_t *sent_len = xcalloc(n, sizeof(*sent_len));
		int good = 1;

		for (r = 0; r < n; r++) {
			struct de_seg g;

			sent_seg[r] = ph == REDUCE_SCATTER ? de_ring_rs_send(r, n, k)
							   : de_ring_ag_send(r, n, k);
			de_ring_segment(count, n, sent_seg[r], &g);
			memcpy(wire[r], elem(buf[r], t, g.off), g.len * esz);
			sent_len[r] = g.len;
		}
		for (r = 0; r < n && good; r++) {
			uint32_t left = (r + n - 1) % n;
			uint32_t seg = ph == REDUCE_SCATTER ? de_ring_rs_recv(r, n, k)
							    : de_ring_ag_recv(r, n, k);
			struct de_seg g;

			de_ring_segment(count, n, seg, &g);
			if (seg != sent_seg[left] || g.len != sent_len[left]) {
				printf("# %s n %u count %zu step %u: rank %u receives segment %u, rank %u sent %u\n",
				       de_dtype_name(t), n, count, k, r, seg, left, sent_seg[left]);
				good = 0;
			} else if (ph == REDUCE_SCATTER) {
				de_reduce_sum(t, elem(buf[r], t, g.off), wire[left], g.len);
			} else {
				memcpy(elem(buf[r], t, g.off), wire[left], g.len * esz);
			}
		}
		free(sent_seg);
		free(sent_len);
		if (!good)
			return 0;
	}
	return 1;
}

/* Whether rank r's segment (r+1)%n holds the full sum after
 * reduce-scatter. */
static int owned_reduced(enum de_dtype t, uint32_t n, size_t count, void **buf)
{
	uint32_t r;
	size_t i;

	for (r = 0; r < n; r++) {
		struct de_seg g;

		de_ring_segment(count, n, de_ring_owned(r, n), &g);
		for (i = g.off; i < g.off + g.len; i++) {
			if (de_value_at(t, buf[r], i) != de_expected_t(t, i, n)) {
				printf("# %s n %u count %zu: after reduce-scatter rank %u element %zu = %g, want %g\n",
				       de_dtype_name(t), n, count, r, i,
				       de_value_at(t, buf[r], i), de_expected_t(t, i, n));
				return 0;
			}
		}
	}
	return 1;
}

static int simulate(enum de_dtype t, uint32_t n, size_t count)
{
	size_t esz = de_dtype_size(t), wire_len = count / n + 1, wrong;
	void **buf = xcalloc(n, sizeof(*buf)), **wire = xcalloc(n, sizeof(*wire));
	int good = 1;
	uint32_t r;

	for (r = 0; r < n; r++) {
		buf[r] = xcalloc(count, esz);
		wire[r] = xcalloc(wire_len, esz);
		de_fill_input(t, buf[r], count, r, n);
	}
	good = run_phase(REDUCE_SCATTER, t, n, count, buf, wire) &&
	       owned_reduced(t, n, count, buf) &&
	       run_phase(ALLGATHER, t, n, count, buf, wire);
	for (r = 0; r < n && good; r++) {
		wrong = de_verify_sum(t, buf[r], count, n);
		if (wrong != 0) {
			printf("# %s n %u count %zu: rank %u has %zu wrong elements\n",
			       de_dtype_name(t), n, count, r, wrong);
			good = 0;
		} else if (memcmp(buf[r], buf[0], count * esz) != 0) {
			printf("# %s n %u count %zu: rank %u differs from rank 0\n",
			       de_dtype_name(t), n, count, r);
			good = 0;
		}
	}
	for (r = 0; r < n; r++) {
		free(buf[r]);
		free(wire[r]);
	}
	free(buf);
	free(wire);
	return good;
}

static void test_simulation(void)
{
	static const size_t big[] = { 1031, 4099, 65537, 100003 };
	size_t d, count, i;
	uint32_t n;

	for (d = 0; d < DE_DTYPE_COUNT; d++) {
		enum de_dtype t = all_dtypes[d];

		for (n = 1; n <= 9; n++) {
			int good = 1;

			for (count = 0; count <= 50 && good; count++)
				good = simulate(t, n, count);
			for (i = 0; i < sizeof(big) / sizeof(big[0]) && good; i++)
				good = simulate(t, n, big[i]);
			ok(good, "%s ring allreduce, %u ranks, counts 0..50 and 1031..100003: exact sums, same bits on every rank",
			   de_dtype_name(t), n);
		}
	}
	/* More ranks than elements, and ranks with no segment at all. */
	for (d = 0; d < DE_DTYPE_COUNT; d++)
		ok(simulate(all_dtypes[d], 33, 7) && simulate(all_dtypes[d], 64, 200),
		   "%s ring allreduce with 33 ranks over 7 elements and 64 over 200",
		   de_dtype_name(all_dtypes[d]));
}

int main(void)
{
	test_segments();
	test_indices();
	test_contributions();
	test_simulation();
	return tap_done();
}
