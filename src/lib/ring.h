/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Ring allreduce (sum) over n ranks, as pure arithmetic: which segment each
 * rank sends and receives at each step, the per-dtype reduction kernel, and
 * the check's deterministic inputs and their exact expected sums. The TCP
 * transport moves the bytes; nothing here touches a socket.
 *
 * The schedule, for rank r of n, neighbours right = (r+1)%n and
 * left = (r-1+n)%n, with steps 0..n-2 in each phase:
 *
 *   reduce-scatter  send segment (r - step) mod n to right;
 *                   receive segment (r - step - 1) mod n from left and add
 *                   it into the local copy.
 *                   Afterwards rank r holds the full sum of segment
 *                   (r+1)%n (de_ring_owned).
 *   allgather       send segment (r + 1 - step) mod n to right;
 *                   receive segment (r - step) mod n from left and
 *                   overwrite the local copy.
 *
 * At every step what left sends is what r receives (same segment index),
 * so both ends agree on the length without sending it. n == 1 has no
 * steps. Each rank sends and receives 2*(n-1) segments, about
 * 2*(n-1)/n of the buffer. */
#ifndef DISTENV_RING_H
#define DISTENV_RING_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

enum de_dtype { DE_F32, DE_F64, DE_I32, DE_I64 };

#define DE_DTYPE_COUNT 4  /* the enum's values are 0..DE_DTYPE_COUNT-1 */

/* Bytes per element; 0 for a value outside the enum. */
size_t de_dtype_size(enum de_dtype t);

/* "float32", "float64", "int32", "int64"; "invalid" outside the enum. */
const char *de_dtype_name(enum de_dtype t);

/* Exactly one of the four names above (no aliases such as "float"), so a
 * typo cannot silently pick a different width. */
int de_dtype_parse(const char *s, enum de_dtype *t, struct de_err *err);

/* The check's inputs are small positive integers (below), so a sum over
 * w ranks is exact while w times the largest input fits the dtype's exact
 * integers; with inputs down to 1 at the largest worlds:
 *   float32  w <= 2^24 = 16777216     int32  w <= 2^31-1
 *   float64, int64: every 32-bit w
 * de_dtype_world_max returns that largest w (0 outside the enum);
 * de_dtype_world_ok fails for w == 0 or w above it, naming the limit. */
uint32_t de_dtype_world_max(enum de_dtype t);
int de_dtype_world_ok(enum de_dtype t, uint32_t world, struct de_err *err);

struct de_seg {
	size_t off, len;  /* in elements */
};

/* Segment s of n over count elements: lengths differ by at most 1, the
 * first (count % n) get one more; count may be 0 or < n (empty segments).
 * n == 0 or s >= n gives the empty segment {count, 0}. */
void de_ring_segment(size_t count, uint32_t n, uint32_t s, struct de_seg *out);

/* Segment indices for rank r of n at step 0..n-2 (see the top comment).
 * All are in [0, n) for any r < n and step; n == 0 returns 0. */
uint32_t de_ring_rs_send(uint32_t r, uint32_t n, uint32_t step);
uint32_t de_ring_rs_recv(uint32_t r, uint32_t n, uint32_t step);
uint32_t de_ring_ag_send(uint32_t r, uint32_t n, uint32_t step);
uint32_t de_ring_ag_recv(uint32_t r, uint32_t n, uint32_t step);

/* The segment rank r holds fully reduced after reduce-scatter: (r+1)%n. */
uint32_t de_ring_owned(uint32_t r, uint32_t n);

/* Both phases as one pipelined stream of 2*(n-1) steps: step i < n-1 is
 * reduce-scatter step i, the rest allgather. What rank r sends at stream
 * step i+1 is what it received at step i (after reducing it, in the
 * reduce-scatter), so a transport may start sending step i+1's first bytes
 * as soon as step i's first bytes are final: no pause between steps or
 * phases. de_ring_stream_send(r, n, 0) is r's own segment r. */
uint32_t de_ring_stream_steps(uint32_t n);
uint32_t de_ring_stream_send(uint32_t r, uint32_t n, uint32_t i);
uint32_t de_ring_stream_recv(uint32_t r, uint32_t n, uint32_t i);

/* Big buffers go around the ring in slices of n segments of
 * DE_RING_SLICE_SEG_BYTES (the last slice shorter), each slice a whole
 * reduce-scatter and allgather, streamed one after the other, as NCCL
 * loops over its buffer: the bytes a slice's allgather writes back are
 * still in cache from its reduce-scatter. On 2 cores, 64 MiB in 1 MiB
 * slices (2 ranks) ran ~40% faster than in one pass, and faster than in
 * 256 KiB or 4 MiB slices. count == 0 has no slice;
 * de_ring_slice gives slice k's elements ({count, 0} past the last). */
#define DE_RING_SLICE_SEG_BYTES (512u << 10)
size_t de_ring_slice_count(size_t count, size_t esz, uint32_t n);
void de_ring_slice(size_t count, size_t esz, uint32_t n, size_t k, struct de_seg *out);

/* dst[i] += src[i] for i < count. Vectorized at -O2. Integer sums wrap
 * (two's complement) instead of being undefined on overflow. */
void de_reduce_sum(enum de_dtype t, void *restrict dst,
		   const void *restrict src, size_t count);

/* The input period p for w ranks: 13 while w*13 is exact in t, then the
 * largest p with w*p exact, down to 1 (0: no input is exact at w). */
uint32_t de_input_period(enum de_dtype t, uint32_t world);

/* Element i of rank r (of w) = 1 + (r + i) % p: each rank's buffer and
 * each position differ (a misplaced segment shows), every partial sum is
 * an integer at most w*p, exact in t, and the result is the same bits
 * whatever order the ranks add in. Element 0 is r + 1 instead while the
 * sum w(w+1)/2 is exact in t (de_fill_has_rank_sum: float32 to 5792
 * ranks): the figure the rank line shows, from the check's own allreduce. */
void de_fill_input(enum de_dtype t, void *buf, size_t count, uint32_t rank,
		   uint32_t world);
int de_fill_has_rank_sum(enum de_dtype t, uint32_t world);

/* Expected element i of dtype t after a sum over world ranks (as a
 * double: for printing and tests; exact below 2^53). */
double de_expected_t(enum de_dtype t, size_t i, uint32_t world);

/* Elements of buf[0..count) that differ from the exact expected sum. An
 * element whose exact sum the dtype cannot hold always counts as wrong. */
size_t de_verify_sum(enum de_dtype t, const void *buf, size_t count,
		     uint32_t world);

/* The figure each rank line shows, the sum of rank+1 over w ranks,
 * w*(w+1)/2, exact for every 32-bit w. */
uint64_t de_rank_sum(uint32_t world);

/* Element i of buf as a double, for printing. */
double de_value_at(enum de_dtype t, const void *buf, size_t i);

#endif
