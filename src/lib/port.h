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

#endif
