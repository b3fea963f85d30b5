/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "tap.h"

static const enum de_dtype all_dtypes[DE_DTYPE_COUNT] = {
	DE_F32, DE_F64, DE_I32, DE_I64
};

static void *xcalloc(size_t n, size_t size)
{
	/* calloc(0, ...) may return NULL; one byte keeps "NULL = failed". */
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL) {
		printf("Bail out! out of memory\n");
		exit(1);
	}
	return p;
}

static unsigned char *elem(void *buf, enum de_dtype t, size_t i)
{
	return (unsigned char *)buf + i * de_dtype_size(t);
}

/* ---- dtype names ------------------------------------------------------ */

static void test_dtypes(void)
{
	static const char *const names[] = { "float32", "float64", "int32", "int64" };
	static const size_t sizes[] = { 4, 8, 4, 8 };
	static const char *const bad[] = { "float", "double", "int", "long",
					   "FLOAT32", "float32 ", "", "int16" };
	struct de_err e;
	enum de_dtype t;
	size_t i;

	for (i = 0; i < DE_DTYPE_COUNT; i++) {
		is_str(de_dtype_name(all_dtypes[i]), names[i], "name of dtype %zu", i);
		is_int((long long)de_dtype_size(all_dtypes[i]), (long long)sizes[i],
		       "size of %s", names[i]);
		t = DE_I64 == all_dtypes[i] ? DE_F32 : DE_I64;
		ok(de_dtype_parse(names[i], &t, &e) == 0 && t == all_dtypes[i],
		   "parse \"%s\"", names[i]);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[128];

		memset(&e, 0, sizeof(e));
		t = DE_F64;
		snprintf(want, sizeof(want),
			 "dtype \"%s\": expected one of float32, float64, int32, int64", bad[i]);
		ok(de_dtype_parse(bad[i], &t, &e) == -1 && t == DE_F64,
		   "parse \"%s\" rejected, output untouched", bad[i]);
		is_str(e.msg, want, "error for \"%s\" lists the four names", bad[i]);
	}
	ok(de_dtype_parse(NULL, &t, &e) == -1, "parse NULL rejected");
	ok(de_dtype_parse("int", &t, NULL) == -1, "parse with no error struct");
	is_str(de_dtype_name((enum de_dtype)7), "invalid", "name outside the enum");
	is_int((long long)de_dtype_size((enum de_dtype)7), 0, "size outside the enum");
}

/* ---- world limits ----------------------------------------------------- */

static void test_world_limits(void)
{
	static const uint32_t want_max[DE_DTYPE_COUNT] = {
		[DE_F32] = 16777216, [DE_F64] = UINT32_MAX,
		[DE_I32] = INT32_MAX, [DE_I64] = UINT32_MAX,
	};
	struct de_err e;
	size_t i;

	for (i = 0; i < DE_DTYPE_COUNT; i++) {
		enum de_dtype t = all_dtypes[i];
		uint32_t max = de_dtype_world_max(t);

		is_int(max, want_max[t], "largest exact world for %s", de_dtype_name(t));
		ok(de_dtype_world_ok(t, 1, &e) == 0, "%s: world 1 ok", de_dtype_name(t));
		ok(de_dtype_world_ok(t, 100000, &e) == 0, "%s: world 100000 ok", de_dtype_name(t));
		ok(de_dtype_world_ok(t, max, &e) == 0, "%s: world %u ok", de_dtype_name(t), max);
		if (max < UINT32_MAX)
			ok(de_dtype_world_ok(t, max + 1, &e) == -1, "%s: world %u rejected",
			   de_dtype_name(t), max + 1);
		ok(de_dtype_world_ok(t, 0, &e) == -1, "%s: world 0 rejected", de_dtype_name(t));
	}
	de_dtype_world_ok(DE_F32, 16777217, &e);
	is_str(e.msg, "world size 16777217 with float32: a sum of one per rank must be at most 16777216 to be exact; expected at most 16777216 ranks (or a wider dtype)",
	       "float32 limit error names the world, the bound and the largest world");
	de_dtype_world_ok(DE_I32, 0, &e);
	is_str(e.msg, "world size 0: expected at least 1 rank", "world 0 error");
	ok(de_dtype_world_ok((enum de_dtype)9, 4, &e) == -1, "dtype outside the enum rejected");
	is_int(de_dtype_world_max((enum de_dtype)9), 0, "no world for a dtype outside the enum");
	is_int(de_input_period(DE_F32, 2), 13, "period 13 for small worlds");
	is_int(de_input_period(DE_F32, 1290555), 13, "float32: period 13 up to 2^24/13 ranks");
	is_int(de_input_period(DE_F32, 1290556), 12, "float32: a shorter period past it");
	is_int(de_input_period(DE_F32, 16777216), 1, "float32: inputs of 1 at 2^24 ranks");
	is_int(de_input_period(DE_F32, 16777217), 0, "float32: nothing exact past 2^24 ranks");
	ok(de_rank_sum(2) == 3 && de_rank_sum(100000) == UINT64_C(5000050000) &&
	   de_rank_sum(UINT32_MAX) == UINT64_C(9223372034707292160),
	   "rank sum N(N+1)/2 exact: 3 for 2 ranks, 5000050000 for 100000, no overflow at 2^32-1");
}

/* At large worlds the sum over ranks, added in rank order and in reverse,
 * is exact and the same bits both ways. */
static void test_sum_at_world_limit(enum de_dtype t, uint32_t world)
{
	size_t count = 29, bytes = count * de_dtype_size(t);
	void *up = xcalloc(count, de_dtype_size(t));
	void *down = xcalloc(count, de_dtype_size(t));
	void *tmp = xcalloc(count, de_dtype_size(t));
	uint32_t r;

	de_fill_input(t, up, count, 0, world);
	de_fill_input(t, down, count, world - 1, world);
	for (r = 1; r < world; r++) {
		de_fill_input(t, tmp, count, r, world);
		de_reduce_sum(t, up, tmp, count);
		de_fill_input(t, tmp, count, world - 1 - r, world);
		de_reduce_sum(t, down, tmp, count);
	}
	is_int((long long)de_verify_sum(t, up, count, world), 0,
	       "%s: sum over %u ranks exact", de_dtype_name(t), world);
	ok(memcmp(up, down, bytes) == 0, "%s: sum over %u ranks is order independent",
	   de_dtype_name(t), world);
	free(up);
	free(down);
	free(tmp);
}

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

/* ---- kernels and the check's values ----------------------------------- */

static void test_reduce(void)
{
	int good = 1;
	size_t len, off, i, d;

	/* Every tail length and misaligned starts (the vector loop handles 16
	 * at a time; the rest is scalar). */
	for (d = 0; d < DE_DTYPE_COUNT; d++) {
		enum de_dtype t = all_dtypes[d];

		for (len = 0; len <= 70; len++) {
			for (off = 0; off < 3; off++) {
				void *dst = xcalloc(len + off, de_dtype_size(t));
				void *src = xcalloc(len + off, de_dtype_size(t));

				de_fill_input(t, dst, len + off, 2, 8);
				de_fill_input(t, src, len + off, 4, 8);
				de_reduce_sum(t, elem(dst, t, off), elem(src, t, off), len);
				for (i = 0; i < len + off; i++) {
					double want = (double)(1 + (2 + i) % 13) + (i < off ? 0 : (double)(1 + (4 + i) % 13));

					if (de_value_at(t, dst, i) != want) {
						printf("# %s len %zu off %zu: element %zu = %g, want %g\n",
						       de_dtype_name(t), len, off, i,
						       de_value_at(t, dst, i), want);
						good = 0;
						break;
					}
				}
				free(dst);
				free(src);
			}
		}
	}
	ok(good, "de_reduce_sum adds exactly [off, off+len) for len 0..70, offsets 0..2, every dtype");

	{
		int32_t a[20], b[20];
		int64_t c[20], e[20];

		for (i = 0; i < 20; i++) {
			a[i] = INT32_MAX;
			b[i] = 1;
			c[i] = INT64_MAX;
			e[i] = 1;
		}
		de_reduce_sum(DE_I32, a, b, 20);
		de_reduce_sum(DE_I64, c, e, 20);
		ok(a[0] == INT32_MIN && a[19] == INT32_MIN, "int32 sum wraps (no undefined overflow)");
		ok(c[0] == INT64_MIN && c[19] == INT64_MIN, "int64 sum wraps (no undefined overflow)");
	}
}

static void test_values(void)
{
	float f[26], g[26];
	int32_t v[13];

	ok(de_expected_t(DE_F64, 0, 1) == 1.0, "expected element 0, 1 rank");
	ok(de_expected_t(DE_F64, 0, 2) == 3.0, "expected element 0, 2 ranks = 1+2");
	ok(de_expected_t(DE_F64, 12, 4) == 19.0, "expected element 12, 4 ranks = 13+1+2+3");
	ok(de_expected_t(DE_F64, 13, 4) == 10.0, "expected element 13 wraps to element 0");
	ok(de_expected_t(DE_F64, 5, 100000) == 100000.0 + 7692.0 * 78 + (5 + 6 + 7 + 8),
	   "expected at 100000 ranks: 7692 whole periods and 4 more");
	/* Element 0 is rank+1 while N(N+1)/2 is exact in the dtype. */
	ok(de_fill_has_rank_sum(DE_F32, 5792) && !de_fill_has_rank_sum(DE_F32, 5793) &&
	   de_fill_has_rank_sum(DE_I64, 100000) && !de_fill_has_rank_sum(DE_I32, 65536),
	   "rank sum in element 0: float32 to 5792 ranks, int32 below 65536, int64 at 100000");
	ok(de_expected_t(DE_F32, 0, 100) == 5050.0 && de_expected_t(DE_F32, 0, 6000) == 6000.0 + 461 * 78 + 21,
	   "expected element 0: N(N+1)/2 while exact (100 ranks: 5050), else the period's");
	{
		float h[3];

		de_fill_input(DE_F32, h, 3, 50, 100);
		ok(h[0] == 51.0f && h[1] == (float)(1 + 51 % 13), "fill: element 0 of rank 50 of 100 is 51");
	}

	de_fill_input(DE_F32, f, 26, 0, 2);
	de_fill_input(DE_F32, g, 26, 1, 2);
	ok(f[0] == 1.0f && f[12] == 13.0f && f[13] == 1.0f && g[0] == 2.0f && g[12] == 1.0f,
	   "fill: element i of rank r is 1 + (r+i)%%13");
	de_reduce_sum(DE_F32, f, g, 26);
	is_int((long long)de_verify_sum(DE_F32, f, 26, 2), 0, "ranks 0 and 1 summed verify for 2 ranks");
	{
		/* Sizes around the fill's block copies: below, at and past one
		 * block (13*64), and not a multiple of anything. */
		static const size_t counts[] = { 1, 831, 832, 833, 1664, 1665, 100003 };
		int all = 1;
		size_t c;
		int d;

		for (d = 0; d < DE_DTYPE_COUNT; d++)
			for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
				size_t n = counts[c], j;
				uint8_t *b = malloc(n * 8 + 8);

				memset(b, 0xee, n * 8 + 8);
				de_fill_input((enum de_dtype)d, b, n, 4, 8);
				for (j = 0; j < n; j++)
					if (de_value_at((enum de_dtype)d, b, j) != (double)(1 + (4 + j) % 13))
						all = 0;
				if (b[n * de_dtype_size((enum de_dtype)d)] != 0xee)
					all = 0;
				free(b);
			}
		ok(all, "fill: every element of every dtype at sizes around the block copies, nothing past the end");
	}
	f[7] += 1.0f;
	is_int((long long)de_verify_sum(DE_F32, f, 26, 2), 1, "one changed element counted");
	f[20] = NAN;
	is_int((long long)de_verify_sum(DE_F32, f, 26, 2), 2, "NaN counted as wrong");
	ok(de_value_at(DE_F32, f, 7) == 18.0, "value_at float32");
	/* No input is exact past the dtype's limit: every element is wrong. */
	is_int((long long)de_verify_sum(DE_F32, f, 26, 16777217), 26,
	       "float32 past 2^24 ranks: nothing verifies");
	memset(v, 0, sizeof(v));
	is_int((long long)de_verify_sum(DE_I32, v, 13, 0), 13, "world 0: nothing verifies");
	v[0] = 165192576;
	ok(de_value_at(DE_I32, v, 0) == 165192576.0, "value_at int32");
}

int main(void)
{
	test_dtypes();
	test_world_limits();
	test_sum_at_world_limit(DE_F32, 100000);
	test_sum_at_world_limit(DE_F32, 1290556); /* the first shorter period */
	test_sum_at_world_limit(DE_I32, 100000);
	test_sum_at_world_limit(DE_F64, 3);
	test_segments();
	test_indices();
	test_contributions();
	test_simulation();
	test_reduce();
	test_values();
	return tap_done();
}
