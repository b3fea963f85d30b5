/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "ring.h"

/* Inputs repeat every period P <= DE_PERIOD elements (see ring.h). */
#define DE_PERIOD 13

static const char *const dtype_names[DE_DTYPE_COUNT] = {
	[DE_F32] = "float32",
	[DE_F64] = "float64",
	[DE_I32] = "int32",
	[DE_I64] = "int64",
};

/* Largest integer each dtype holds exactly (and every integer below it). */
static const uint64_t dtype_exact_max[DE_DTYPE_COUNT] = {
	[DE_F32] = UINT64_C(1) << 24,
	[DE_F64] = UINT64_C(1) << 53,
	[DE_I32] = INT32_MAX,
	[DE_I64] = INT64_MAX,
};

static int dtype_valid(enum de_dtype t)
{
	return (unsigned)t < DE_DTYPE_COUNT;
}

size_t de_dtype_size(enum de_dtype t)
{
	switch (t) {
	case DE_F32: return sizeof(float);
	case DE_F64: return sizeof(double);
	case DE_I32: return sizeof(int32_t);
	case DE_I64: return sizeof(int64_t);
	}
	return 0;
}

const char *de_dtype_name(enum de_dtype t)
{
	return dtype_valid(t) ? dtype_names[t] : "invalid";
}

int de_dtype_parse(const char *s, enum de_dtype *t, struct de_err *err)
{
	unsigned i;

	for (i = 0; s != NULL && i < DE_DTYPE_COUNT; i++) {
		if (strcmp(s, dtype_names[i]) == 0) {
			*t = (enum de_dtype)i;
			return 0;
		}
	}
	return de_errf(err, "dtype \"%s\": expected one of float32, float64, int32, int64",
		       s != NULL ? s : "(null)");
}

/* w*(w+1)/2 fits in 64 bits for every 32-bit w: (2^32-1)*2^32 < 2^64. */
static uint64_t triangle(uint32_t w)
{
	uint64_t a = w, b = (uint64_t)w + 1;

	return (a % 2 == 0 ? a / 2 * b : b / 2 * a);
}

uint64_t de_rank_sum(uint32_t world)
{
	return triangle(world);
}

uint32_t de_input_period(enum de_dtype t, uint32_t world)
{
	uint64_t p;

	if (!dtype_valid(t) || world == 0)
		return 0;
	/* Every input is at most P, so every partial sum is at most w*P. */
	p = dtype_exact_max[t] / world;
	return p > DE_PERIOD ? DE_PERIOD : (uint32_t)p;
}

uint32_t de_dtype_world_max(enum de_dtype t)
{
	if (!dtype_valid(t))
		return 0;
	return dtype_exact_max[t] > UINT32_MAX ? UINT32_MAX : (uint32_t)dtype_exact_max[t];
}

int de_dtype_world_ok(enum de_dtype t, uint32_t world, struct de_err *err)
{
	uint32_t max = de_dtype_world_max(t);

	if (!dtype_valid(t))
		return de_errf(err, "dtype %d: expected one of float32, float64, int32, int64",
			       (int)t);
	if (world == 0)
		return de_errf(err, "world size 0: expected at least 1 rank");
	if (world > max)
		return de_errf(err, "world size %u with %s: a sum of one per rank must be at most %llu to be exact; expected at most %u ranks (or a wider dtype)",
			       world, dtype_names[t],
			       (unsigned long long)dtype_exact_max[t], max);
	return 0;
}

void de_ring_segment(size_t count, uint32_t n, uint32_t s, struct de_seg *out)
{
	size_t base, rem;

	if (n == 0 || s >= n) {
		out->off = count;
		out->len = 0;
		return;
	}
	base = count / n;
	rem = count % n;
	out->len = base + (s < rem);
	out->off = (size_t)s * base + (s < rem ? s : rem);
}

/* (r + fwd - back) mod n without wrapping 32 bits (n may be near 2^32). */
static uint32_t ring_index(uint32_t r, uint32_t n, uint64_t fwd, uint64_t back)
{
	if (n == 0)
		return 0;
	return (uint32_t)(((uint64_t)r % n + fwd % n + n - back % n) % n);
}

uint32_t de_ring_rs_send(uint32_t r, uint32_t n, uint32_t step)
{
	return ring_index(r, n, 0, step);
}

uint32_t de_ring_rs_recv(uint32_t r, uint32_t n, uint32_t step)
{
	return ring_index(r, n, 0, (uint64_t)step + 1);
}

uint32_t de_ring_ag_send(uint32_t r, uint32_t n, uint32_t step)
{
	return ring_index(r, n, 1, step);
}

uint32_t de_ring_ag_recv(uint32_t r, uint32_t n, uint32_t step)
{
	return ring_index(r, n, 0, step);
}

uint32_t de_ring_owned(uint32_t r, uint32_t n)
{
	return ring_index(r, n, 1, 0);
}

uint32_t de_ring_stream_steps(uint32_t n)
{
	return n < 2 ? 0 : 2 * (n - 1);
}

uint32_t de_ring_stream_send(uint32_t r, uint32_t n, uint32_t i)
{
	if (n < 2)
		return 0;
	return i < n - 1 ? de_ring_rs_send(r, n, i) : de_ring_ag_send(r, n, i - (n - 1));
}

uint32_t de_ring_stream_recv(uint32_t r, uint32_t n, uint32_t i)
{
	if (n < 2)
		return 0;
	return i < n - 1 ? de_ring_rs_recv(r, n, i) : de_ring_ag_recv(r, n, i - (n - 1));
}

static size_t slice_elems(size_t esz, uint32_t n)
{
	size_t seg = esz ? DE_RING_SLICE_SEG_BYTES / esz : 1;

	return (size_t)(n ? n : 1) * (seg ? seg : 1);
}

size_t de_ring_slice_count(size_t count, size_t esz, uint32_t n)
{
	size_t per = slice_elems(esz, n);

	return count / per + (count % per != 0);
}

void de_ring_slice(size_t count, size_t esz, uint32_t n, size_t k, struct de_seg *out)
{
	size_t per = slice_elems(esz, n);

	if (k >= de_ring_slice_count(count, esz, n)) {
		out->off = count;
		out->len = 0;
		return;
	}
	out->off = k * per;
	out->len = count - out->off < per ? count - out->off : per;
}

/* GCC's -O2 ("very cheap") vectorizer gives up on a plain loop of unknown
 * length for 8-byte types (it costs a scalar epilogue in); an inner loop
 * of a fixed SUM_BLOCK elements has none, so every dtype vectorizes. 16 is
 * a whole number of vectors for every dtype up to 64-byte vectors. The
 * short tail stays scalar. */
#define SUM_BLOCK 16

#define DEFINE_SUM(name, T, ADD)                                          \
	static void name(T *restrict d, const T *restrict s, size_t n)  \
	{                                                               \
		size_t i = 0, j;                                        \
									\
		for (; n - i >= SUM_BLOCK; i += SUM_BLOCK)              \
			for (j = 0; j < SUM_BLOCK; j++)                 \
				d[i + j] = ADD(d[i + j], s[i + j]);     \
		for (; i < n; i++)                                      \
			d[i] = ADD(d[i], s[i]);                         \
	}

#define ADD_FLOAT(a, b) ((a) + (b))
/* Through the unsigned type: wraps instead of undefined overflow. */
#define ADD_U32(a, b) ((int32_t)((uint32_t)(a) + (uint32_t)(b)))
#define ADD_U64(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))

DEFINE_SUM(sum_f32, float, ADD_FLOAT)
DEFINE_SUM(sum_f64, double, ADD_FLOAT)
DEFINE_SUM(sum_i32, int32_t, ADD_U32)
DEFINE_SUM(sum_i64, int64_t, ADD_U64)

void de_reduce_sum(enum de_dtype t, void *restrict dst,
		   const void *restrict src, size_t count)
{
	switch (t) {
	case DE_F32: sum_f32(dst, src, count); break;
	case DE_F64: sum_f64(dst, src, count); break;
	case DE_I32: sum_i32(dst, src, count); break;
	case DE_I64: sum_i64(dst, src, count); break;
	}
}

/* The pattern repeats every p elements: fill one block of whole periods,
 * then copy it forward in doubling steps (the copies start at multiples
 * of the period, so every element keeps i % p). A plain element loop took
 * as long as the 64 MiB allreduce it prepares. */
#define FILL_PERIODS 64

#define DEFINE_FILL(name, T)                                              \
	static void name(T *b, size_t n, uint32_t k, uint32_t p)        \
	{                                                               \
		size_t i, done = n < (size_t)p * FILL_PERIODS ? n :     \
				 (size_t)p * FILL_PERIODS;              \
									\
		for (i = 0; i < done; i++) {                            \
			b[i] = (T)(k + 1);                              \
			if (++k == p)                                   \
				k = 0;                                  \
		}                                                       \
		while (done < n) {                                      \
			size_t m = done < n - done ? done : n - done;   \
									\
			memcpy(b + done, b, m * sizeof(T));             \
			done += m;                                      \
		}                                                       \
	}

DEFINE_FILL(fill_f32, float)
DEFINE_FILL(fill_f64, double)
DEFINE_FILL(fill_i32, int32_t)
DEFINE_FILL(fill_i64, int64_t)

/* Whether dtype t holds the integer v exactly. A float does when v
 * converts back to itself (the < 2^64 test keeps that conversion
 * defined). */
static int holds_exactly(enum de_dtype t, uint64_t v)
{
	float f = (float)v;
	double d = (double)v;

	switch (t) {
	case DE_F32: return f < 0x1p64f && (uint64_t)f == v;
	case DE_F64: return d < 0x1p64 && (uint64_t)d == v;
	case DE_I32: return v <= INT32_MAX;
	case DE_I64: return v <= INT64_MAX;
	}
	return 0;
}

int de_fill_has_rank_sum(enum de_dtype t, uint32_t world)
{
	/* Every partial sum of rank+1 is at most the whole, so the whole
	 * being exact is enough. */
	return dtype_valid(t) && world > 0 && triangle(world) <= dtype_exact_max[t] &&
	       holds_exactly(t, triangle(world));
}

void de_fill_input(enum de_dtype t, void *buf, size_t count, uint32_t rank,
		   uint32_t world)
{
	uint32_t p = de_input_period(t, world);

	if (p == 0)
		p = 1; /* de_dtype_world_ok refuses this world; fill something */
	switch (t) {
	case DE_F32: fill_f32(buf, count, rank % p, p); break;
	case DE_F64: fill_f64(buf, count, rank % p, p); break;
	case DE_I32: fill_i32(buf, count, rank % p, p); break;
	case DE_I64: fill_i64(buf, count, rank % p, p); break;
	}
	if (count > 0 && de_fill_has_rank_sum(t, world)) {
		switch (t) {
		case DE_F32: ((float *)buf)[0] = (float)rank + 1; break;
		case DE_F64: ((double *)buf)[0] = (double)rank + 1; break;
		case DE_I32: ((int32_t *)buf)[0] = (int32_t)rank + 1; break;
		case DE_I64: ((int64_t *)buf)[0] = (int64_t)rank + 1; break;
		}
	}
}

/* Sum over r < w of (r + a) % p for a < p: q whole turns of 0..p-1, then
 * m = w % p values from a up, wrapping at p. */
static uint64_t residue_sum(uint32_t w, uint32_t p, uint32_t a)
{
	uint64_t q = w / p, m = w % p, sum = q * ((uint64_t)p * (p - 1) / 2);

	if (a + m <= p)
		return sum + m * a + m * (m - 1) / 2;
	/* a..p-1, then 0..k-1 */
	{
		uint64_t first = p - a, k = m - first;

		return sum + ((uint64_t)a + p - 1) * first / 2 + k * (k - 1) / 2;
	}
}

double de_expected_t(enum de_dtype t, size_t i, uint32_t world)
{
	uint32_t p = de_input_period(t, world);

	if (i == 0 && de_fill_has_rank_sum(t, world))
		return (double)triangle(world);
	if (p == 0)
		return 0;
	return (double)((uint64_t)world + residue_sum(world, p, (uint32_t)(i % p)));
}



/* The exact sum for each residue of the period, in T where T holds it;
 * elements then compare with == (no tolerance: the sums are integers). */
#define DEFINE_VERIFY(name, T, DTYPE)                                     \
	static size_t name(const T *b, size_t n, uint32_t world)        \
	{                                                               \
		T want[DE_PERIOD];                                      \
		int exact[DE_PERIOD];                                   \
		uint32_t p = de_input_period(DTYPE, world), k;          \
		size_t i, wrong = 0;                                    \
									\
		if (p == 0)                                             \
			return n;                                       \
		for (k = 0; k < p; k++) {                               \
			uint64_t v = (uint64_t)world +                  \
				     residue_sum(world, p, k);          \
									\
			exact[k] = holds_exactly(DTYPE, v);             \
			want[k] = exact[k] ? (T)v : 0;                  \
		}                                                       \
		i = k = 0;                                              \
		/* Element 0 carries rank+1 where its sum is exact. */  \
		if (n > 0 && de_fill_has_rank_sum(DTYPE, world)) {      \
			wrong += b[0] != (T)triangle(world);            \
			i = 1;                                          \
			k = 1 % p;                                      \
		}                                                       \
		for (; i < n; i++) {                                    \
			if (!exact[k] || b[i] != want[k])               \
				wrong++;                                \
			if (++k == p)                                   \
				k = 0;                                  \
		}                                                       \
		return wrong;                                           \
	}

DEFINE_VERIFY(verify_f32, float, DE_F32)
DEFINE_VERIFY(verify_f64, double, DE_F64)
DEFINE_VERIFY(verify_i32, int32_t, DE_I32)
DEFINE_VERIFY(verify_i64, int64_t, DE_I64)

size_t de_verify_sum(enum de_dtype t, const void *buf, size_t count,
		     uint32_t world)
{
	switch (t) {
	case DE_F32: return verify_f32(buf, count, world);
	case DE_F64: return verify_f64(buf, count, world);
	case DE_I32: return verify_i32(buf, count, world);
	case DE_I64: return verify_i64(buf, count, world);
	}
	return count;
}

double de_value_at(enum de_dtype t, const void *buf, size_t i)
{
	switch (t) {
	case DE_F32: return ((const float *)buf)[i];
	case DE_F64: return ((const double *)buf)[i];
	case DE_I32: return (double)((const int32_t *)buf)[i];
	case DE_I64: return (double)((const int64_t *)buf)[i];
	}
	return 0.0;
}
