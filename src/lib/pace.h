/* SPDX-License-Identifier: GPL-2.0-or-later */
/* How the socket backend paces its waits and sends, as pure decisions
 * (socket.c measures what they take: CPU switches, the link's MSS). */
#ifndef DISTENV_PACE_H
#define DISTENV_PACE_H

#include <stddef.h>

/* A rank with a CPU per local rank spins its first microseconds without
 * sched_yield (lower latency where it really has the CPU). Hosts that
 * share CPUs behind its back (namespaces or containers on one machine,
 * other work) show it as involuntary context switches: the spin held a
 * CPU a peer was waiting for. Measured (4 ranks on 2 hosts, 2 cores,
 * 2026-12-06): 8 B-4 KiB took 43-98 us with the pure spin, 17-36 us
 * without; 2 ranks with a CPU each saw no such switches. After this
 * many, the rank yields from the start. */
#define DE_PACE_SHARED_SWITCHES 16ul

/* Whether a wait spins without yielding at first: own_cpu (a CPU per
 * local rank by the host's count) and fewer than DE_PACE_SHARED_SWITCHES
 * involuntary switches seen so far while waiting. */
int de_pace_pure_spin(int own_cpu, unsigned long switches);

/* The most bytes one send() takes from a ring step of span bytes on a
 * link of TCP MSS mss (0: unknown). On links with a small MSS (below
 * DE_PACE_SMALL_MSS: Ethernet, veth) a span above DE_PACE_BIG_SPAN goes
 * out DE_PACE_SEND_PIECE at a time, so that the neighbour's bytes keep
 * arriving and being summed between sends; else up to chunk. Measured
 * (2 ranks on 2 hosts over veth, MSS 1448, 2026-12-06): 512 KiB-64 MiB
 * 1.35-2x faster in 32 KiB sends than in 1 MiB ones; 256 KiB (128 KiB
 * spans) slower in 32 KiB sends, so only bigger spans; on loopback (MSS
 * 64 KiB) 32 KiB sends were 1.2-2.9x slower, so loopback keeps chunk. */
#define DE_PACE_SMALL_MSS (16u << 10)
#define DE_PACE_BIG_SPAN (128u << 10)
#define DE_PACE_SEND_PIECE (32u << 10)
size_t de_pace_send_max(size_t span, unsigned mss, size_t chunk);

#endif
