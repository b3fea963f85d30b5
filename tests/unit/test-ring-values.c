/* SPDX-License-Identifier: GPL-2.0-or-later */
/* src/lib/ring.c's dtypes, world limits, reduction kernels and the check's
 * values (test-ring.c: the schedule). */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ring-test.h"
#include "tap.h"

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
	test_reduce();
	test_values();
	return tap_done();
}
