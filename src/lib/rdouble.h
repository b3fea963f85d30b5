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

#include "ring.h" /* struct de_seg */

enum de_algo {
	DE_ALGO_RING,       /* the pipelined ring (ring.h) */
	DE_ALGO_ALLGATHER,  /* every buffer around the ring, n-1 hops, each rank sums all */
	DE_ALGO_RDOUBLE,    /* recursive doubling, below */
	DE_ALGO_RHALVING,   /* reduce-scatter by recursive halving, allgather by doubling, below */
};

/* Small buffers take the algorithm with the fewest hops in a row: the
 * ring's allgather of whole buffers (n-1 hops; only up to 8 ranks, as it
 * sends n-1 whole buffers) or recursive doubling (de_rd_hops), the
 * allgather on a tie (it needs no connections beyond the ring's). The
 * allgather up to DE_SMALL_MAX_BYTES (2 ranks on loopback: faster than
 * the ring up to 16 KiB); recursive doubling up to DE_RD_MAX_BYTES (4 and
 * 8 ranks on 2 hosts, 2 cores, 2026-12-06: 2x faster than the ring at
 * 32-64 KiB, about even at 128 KiB, slower at 256 KiB). Recursive
 * doubling receives into the ring's 1 MiB CHUNK buffer, which bounds
 * DE_RD_MAX_BYTES.
 *
 * Above, recursive halving (de_rh_block) where it keeps bytes on a node:
 * a power-of-two world whose ranks sit in aligned blocks of at least 2
 * per node (de_rh_node_block), up to DE_RH_MAX_BYTES_2 with blocks of 2
 * and DE_RH_MAX_BYTES_4 with 4 or more; the pipelined ring otherwise.
 * Measured (distenv alone, against the ring, 2 cores, namespaces on one
 * bridge, 2026-12-06): 4 ranks on 2 hosts 1.3-1.7x faster at 512 KiB-
 * 1 MiB, even at 2-32 MiB; 8 ranks on 4 hosts 1.3-2.1x at 256 KiB-1 MiB,
 * 0.84-1.06x above; 8 ranks on 2 hosts 1.24-2.45x at 256 KiB-32 MiB,
 * 1.04x at 64 MiB; one rank per host (4 on 4) 0.76-0.97x everywhere: the
 * same bytes as the ring, with nothing kept on a node. Worlds that are not
 * a power of two keep the ring: their fold would move the whole buffer
 * twice more (not measured). */
#define DE_SMALL_MAX_BYTES (16u << 10)
#define DE_RD_MAX_BYTES (128u << 10)
#define DE_ALLGATHER_MAX_WORLD 8u
/* Worlds above this never use recursive doubling or halving: each rank
 * would dial up to log2(n) more connections at the start, and the
 * preflight at hundreds of hosts must not pay for them
 * (bench/preflight-scale). */
#define DE_RD_MAX_WORLD 64u
#define DE_RH_MAX_BYTES_2 (1u << 20)
#define DE_RH_MAX_BYTES_4 (32u << 20)

/* The algorithm for a buffer of bytes over world ranks whose node blocks
 * are node_block ranks (de_rh_node_block; 1 when unknown). */
enum de_algo de_allreduce_algo(size_t bytes, uint32_t world, uint32_t node_block);

/* The largest power of two k <= n such that ranks jk..jk+k-1 share a
 * node for every j (node[r]: rank r's node index). A world on one node,
 * where no step crosses the network, counts as blocks of 2 (measured on
 * loopback: 4 ranks, halving 1.17-1.40x the ring at 256 KiB-1 MiB and
 * 0.74-0.88x above; 8 ranks about even). 1 for n < 2 or node == NULL. */
uint32_t de_rh_node_block(const uint32_t *node, uint32_t n);

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


/* Reduce-scatter by recursive halving, then allgather by recursive
 * doubling (Rabenseifner's): the same fold, partners and unfold as
 * recursive doubling, but at step k each active rank keeps half of the
 * elements it holds and sends the other half, the half its partner
 * keeps, which both sum; the allgather runs the steps backwards, each
 * rank sending what it holds and receiving its partner's. Per rank it
 * sends 2(p-1)/p of the buffer, as the ring does, in 2 log2(p) hops.
 * Step 0's partners are neighbours (r ^ 1): under Slurm's block
 * distribution the big first halvings stay on a node and only the
 * small last ones cross the network, where the ring sends every byte a
 * node's last rank passes on across it. Every element is summed on one
 * rank only and copied from there, so every rank holds the same bits.
 *
 * The elements active rank r holds after the first k halvings
 * (0 <= k <= de_rd_steps(n); k = 0 is the whole buffer): at step j the
 * range is split at len/2, bit j of r's active number choosing the upper
 * half. Partners at step k hold the same range before it, so each sends
 * exactly what the other keeps: de_rh_block(q, n, k + 1, count). A
 * FOLDED rank holds nothing: {0, 0}. */
void de_rh_block(uint32_t r, uint32_t n, uint32_t k, size_t count, struct de_seg *out);

#endif
