/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which allreduce a buffer gets, and recursive doubling's schedule, as
 * pure arithmetic (the socket backend moves the bytes).
 *
 * Small buffers want few hops, big ones few bytes per rank: the ring
 * (ring.h) sends 2(n-1)/n of the buffer per rank but takes 2(n-1) hops
 * in a row; recursive doubling takes log2(n) hops, each the whole
 * buffer. The choice depends only on the buffer's bytes and the world,
 * so every rank makes the same one.
 *
 * Recursive doubling over n ranks, p the largest power of two <= n and
 * e = n - p extra ranks (the usual fold, as MPICH's):
 *   fold     each even rank r < 2e sends its buffer to r+1 and sits out
 *            (FOLDED); r+1 adds it in (FOLD_HOST) and takes part
 *   steps    k = 0..log2(p)-1: the p active ranks, numbered v = r/2 for
 *            r < 2e and r - e above, swap whole buffers with v ^ 2^k and
 *            add what arrives
 *   unfold   each FOLD_HOST sends the result back to its FOLDED rank
 * a + b == b + a in IEEE arithmetic, and both partners of a step hold
 * sums of the same ranks grouped the same way, so every rank ends with
 * the same bits. */
#ifndef DISTENV_RDOUBLE_H
#define DISTENV_RDOUBLE_H

#include <stddef.h>
#include <stdint.h>

enum de_algo {
	DE_ALGO_RING,       /* the pipelined ring (ring.h) */
	DE_ALGO_ALLGATHER,  /* every buffer around the ring, n-1 hops, each rank sums all */
	DE_ALGO_RDOUBLE,    /* recursive doubling, below */
};

/* Small buffers take the algorithm with the fewest hops in a row: the
 * ring's allgather of whole buffers (n-1 hops; only up to 8 ranks, as it
 * sends n-1 whole buffers) or recursive doubling (de_rd_hops), the
 * allgather on a tie (it needs no connections beyond the ring's). The
 * allgather up to DE_SMALL_MAX_BYTES (2 ranks on loopback: faster than
 * the ring up to 16 KiB); recursive doubling up to DE_RD_MAX_BYTES (4 and
 * 8 ranks on 2 hosts, 2 cores, 2026-12-06: 2x faster than the ring at
 * 32-64 KiB, about even at 128 KiB, slower at 256 KiB). Above, the ring.
 * Recursive doubling receives into the ring's 1 MiB CHUNK buffer, which
 * bounds DE_RD_MAX_BYTES. */
#define DE_SMALL_MAX_BYTES (16u << 10)
#define DE_RD_MAX_BYTES (128u << 10)
#define DE_ALLGATHER_MAX_WORLD 8u
/* Worlds above this never use recursive doubling: each rank would dial
 * up to log2(n) more connections at the start, and the preflight at
 * hundreds of hosts must not pay for them (bench/preflight-scale). */
#define DE_RD_MAX_WORLD 64u

/* The algorithm for a buffer of bytes over world ranks. */
enum de_algo de_allreduce_algo(size_t bytes, uint32_t world);

/* Hops in a row: recursive doubling's steps plus the fold and unfold
 * when n is not a power of two; 0 for n < 2. */
uint32_t de_rd_hops(uint32_t n);

/* Whether some buffer over this world uses recursive doubling: its extra
 * connections are only worth making then. */
int de_rd_used(uint32_t world);

/* The largest power of two <= n (0 for n == 0). */
uint32_t de_rd_pof2(uint32_t n);

/* log2(de_rd_pof2(n)): the exchange steps between the fold and unfold. */
uint32_t de_rd_steps(uint32_t n);

enum de_rd_role {
	DE_RD_PLAIN,      /* takes part in every step */
	DE_RD_FOLD_HOST,  /* first adds in rank r-1's buffer, last sends it the result */
	DE_RD_FOLDED,     /* sends its buffer to r+1, then waits for the result */
};

enum de_rd_role de_rd_role(uint32_t r, uint32_t n);

/* The other rank of r's fold (r+1 or r-1); r itself for a PLAIN rank. */
uint32_t de_rd_fold_peer(uint32_t r, uint32_t n);

/* The rank r swaps buffers with at step k (k < de_rd_steps(n)); r itself
 * for a FOLDED rank or k out of range. */
uint32_t de_rd_partner(uint32_t r, uint32_t n, uint32_t k);

/* The TCP connection rank r uses to reach rank q: the ring's own links
 * where q is a ring neighbour (RIGHT: the one r dialled to r+1; LEFT: the
 * one r-1 dialled to r), else a connection of its own that the lower rank
 * dials (DIAL) and the higher accepts (ACCEPT). Both ends of every pair
 * name the same connection: RIGHT at one end is LEFT at the other, DIAL
 * is ACCEPT. NONE for q == r or q >= n. */
enum de_rd_link_kind { DE_LINK_NONE, DE_LINK_RIGHT, DE_LINK_LEFT, DE_LINK_DIAL, DE_LINK_ACCEPT };

enum de_rd_link_kind de_rd_link(uint32_t r, uint32_t n, uint32_t q);

/* The ranks r talks to in recursive doubling (its fold peer, then its
 * partners by step), each once, into out[0..max): their count. At most
 * de_rd_steps(n) + 1. */
uint32_t de_rd_peers(uint32_t r, uint32_t n, uint32_t *out, uint32_t max);
/* Room for every peer up to DE_RD_MAX_WORLD: log2(64) + 1. */
#define DE_RD_MAX_PEERS 8u

#endif
