/* SPDX-License-Identifier: GPL-2.0-or-later */
/* MASTER_PORT choice: a pure function of (job id, step id) so every task of
 * a step computes the same port with no communication. */
#ifndef DISTENV_PORT_H
#define DISTENV_PORT_H

#include <stdint.h>

#include "err.h"
#include "step.h"

/* Below Linux's default ephemeral range (32768-60999), so a port chosen
 * here is not already taken by some outgoing connection on the node, and
 * below torchrun's own defaults (29400 for c10d rendezvous, 29500 for
 * --master_port), which a torchrun started by hand on the node takes. */
#define DE_PORT_MIN_DEFAULT 20000
#define DE_PORT_MAX_DEFAULT 29399


/* Validates a [min, max] range: 1024 <= min <= max <= 65535. */
int de_port_range_check(unsigned long min, unsigned long max,
			struct de_err *err);

/* Deterministic port in [min, max]. Steps of one job map to consecutive
 * slots from a per-job hashed base, so concurrent steps of a job never
 * collide (until the range wraps); the batch/interactive/extern steps use
 * the last slots. Different jobs spread by the hash. */
uint16_t de_port_for(uint32_t job_id, uint32_t step_id, uint16_t min,
		     uint16_t max);

/* Slurm's reserved ports for the step (MpiParams=ports=LO-HI; srun
 * exports them as SLURM_STEP_RESV_PORTS, e.g. "12001-12002" or
 * "12001,12005-12006"): the first one. slurmctld never gives a port to two
 * steps on one node, so a MASTER_PORT taken from here cannot collide.
 * The whole value must be a list of N or N-M (N <= M, 1..65535): a value
 * read half-way would hide a Slurm that changed the format. */
int de_resv_ports_first(const char *name, const char *val, uint16_t *port,
			struct de_err *err);

/* The kernel's ephemeral range, /proc/sys/net/ipv4/ip_local_port_range's
 * text ("32768\t60999\n"). */
int de_ephemeral_parse(const char *text, uint16_t *lo, uint16_t *hi,
		       struct de_err *err);

/* The same, read from path (DE_EPHEMERAL_PATH; ephemeral.c). */
#define DE_EPHEMERAL_PATH "/proc/sys/net/ipv4/ip_local_port_range"
int de_ephemeral_read(const char *path, uint16_t *lo, uint16_t *hi, struct de_err *err);

/* Do [a1, a2] and [b1, b2] share a port? */
int de_port_ranges_overlap(uint16_t a1, uint16_t a2, uint16_t b1, uint16_t b2);

/* "LO-HI", a range de_port_range_check accepts (distenv-check's
 * --port-range): what names the input in the error. */
int de_port_range_parse(const char *what, const char *s, uint16_t *lo, uint16_t *hi,
			struct de_err *err);

/* The ports of [lo, hi] that are not in text, the kernel's
 * ip_local_reserved_ports ("20000-29399,30000\n", or "\n" for none):
 * their count (0: all reserved), the first in *first; -1 with err when
 * text is not such a list. */
long de_ports_unreserved(const char *text, uint16_t lo, uint16_t hi, uint16_t *first,
			 struct de_err *err);

/* The same, read from path (DE_RESERVED_PATH; ephemeral.c). */
#define DE_RESERVED_PATH "/proc/sys/net/ipv4/ip_local_reserved_ports"
long de_reserved_read(const char *path, uint16_t lo, uint16_t hi, uint16_t *first,
		      struct de_err *err);

#endif
