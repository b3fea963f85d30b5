/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include "rdouble.h"

uint32_t de_rd_pof2(uint32_t n)
{
	uint32_t p = 1;

	if (n == 0)
		return 0;
	while (p <= n / 2)
		p *= 2;
	return p;
}

uint32_t de_rd_steps(uint32_t n)
{
	uint32_t p = de_rd_pof2(n), k = 0;

	while (p > 1) {
		p /= 2;
		k++;
	}
	return k;
}

uint32_t de_rd_hops(uint32_t n)
{
	if (n < 2)
		return 0;
	return de_rd_steps(n) + (de_rd_pof2(n) == n ? 0 : 2);
}

int de_rd_used(uint32_t world)
{
	return world >= 2 && world <= DE_RD_MAX_WORLD &&
	       (world > DE_ALLGATHER_MAX_WORLD || de_rd_hops(world) < world - 1);
}

enum de_algo de_allreduce_algo(size_t bytes, uint32_t world, uint32_t node_block)
{
	if (world < 2)
		return DE_ALGO_RING;
	if (de_rd_used(world)) {
		size_t rh_max = node_block >= 4 ? DE_RH_MAX_BYTES_4 :
				node_block >= 2 ? DE_RH_MAX_BYTES_2 : 0;

		if (bytes <= DE_RD_MAX_BYTES)
			return DE_ALGO_RDOUBLE;
		return de_rd_pof2(world) == world && bytes <= rh_max ? DE_ALGO_RHALVING : DE_ALGO_RING;
	}
	if (world <= DE_ALLGATHER_MAX_WORLD && bytes <= DE_SMALL_MAX_BYTES)
		return DE_ALGO_ALLGATHER;
	return DE_ALGO_RING;
}

/* The extra ranks, n - p: ranks below 2e pair up in the fold. */
static uint32_t extra(uint32_t n)
{
	return n - de_rd_pof2(n);
}

enum de_rd_role de_rd_role(uint32_t r, uint32_t n)
{
	if (r >= n || r >= 2 * extra(n))
		return DE_RD_PLAIN;
	return r % 2 == 0 ? DE_RD_FOLDED : DE_RD_FOLD_HOST;
}

uint32_t de_rd_fold_peer(uint32_t r, uint32_t n)
{
	switch (de_rd_role(r, n)) {
	case DE_RD_FOLDED: return r + 1;
	case DE_RD_FOLD_HOST: return r - 1;
	case DE_RD_PLAIN: break;
	}
	return r;
}

/* Active (not FOLDED) rank r's number among the p active ranks. */
static uint32_t active(uint32_t r, uint32_t n)
{
	uint32_t e = extra(n);

	return r < 2 * e ? r / 2 : r - e;
}

uint32_t de_rd_partner(uint32_t r, uint32_t n, uint32_t k)
{
	uint32_t e = extra(n), w;

	if (r >= n || k >= de_rd_steps(n) || de_rd_role(r, n) == DE_RD_FOLDED)
		return r;
	/* Active ranks renumbered 0..p-1, then back. */
	w = active(r, n) ^ (UINT32_C(1) << k);
	return w < e ? 2 * w + 1 : w + e;
}

enum de_rd_link_kind de_rd_link(uint32_t r, uint32_t n, uint32_t q)
{
	if (r >= n || q >= n || q == r)
		return DE_LINK_NONE;
	/* The plain neighbours first, so that with n == 2 rank 0's RIGHT
	 * and rank 1's LEFT are the one connection rank 0 dialled. */
	if (q == r + 1)
		return DE_LINK_RIGHT;
	if (q + 1 == r)
		return DE_LINK_LEFT;
	if (q == (r + 1) % n)
		return DE_LINK_RIGHT;
	if (q == (r + n - 1) % n)
		return DE_LINK_LEFT;
	return r < q ? DE_LINK_DIAL : DE_LINK_ACCEPT;
}

uint32_t de_rd_peers(uint32_t r, uint32_t n, uint32_t *out, uint32_t max)
{
	uint32_t got = 0, k, i, q;

	if (r >= n)
		return 0;
	for (k = 0; k <= de_rd_steps(n); k++) {
		int seen = 0;

		/* k == 0 is the fold; k >= 1 is step k-1. */
		q = k == 0 ? de_rd_fold_peer(r, n) : de_rd_partner(r, n, k - 1);
		if (q == r)
			continue;
		for (i = 0; i < got; i++)
			seen |= out[i] == q;
		if (!seen && got < max)
			out[got++] = q;
	}
	return got;
}

void de_rh_block(uint32_t r, uint32_t n, uint32_t k, size_t count, struct de_seg *out)
{
	uint32_t v, j;

	out->off = 0;
	out->len = r < n && de_rd_role(r, n) != DE_RD_FOLDED ? count : 0;
	if (out->len == 0)
		return;
	v = active(r, n);
	for (j = 0; j < k && j < de_rd_steps(n); j++) {
		size_t half = out->len / 2;

		if (v >> j & 1) {
			out->off += half;
			out->len -= half;
		} else {
			out->len = half;
		}
	}
}

uint32_t de_rh_node_block(const uint32_t *node, uint32_t n)
{
	uint32_t k = 1, r;

	if (node == NULL || n < 2)
		return 1;
	for (r = 1; r < n && node[r] == node[0]; r++)
		;
	if (r == n)
		return n >= 4 ? 2 : 1;
	for (;;) {
		uint32_t next = 2 * k;
		int same = n % next == 0;

		for (r = 0; same && r < n; r++)
			same = node[r] == node[r - r % next];
		if (!same)
			return k;
		k = next;
	}
}
