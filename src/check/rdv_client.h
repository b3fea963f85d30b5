/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the rendezvous client's two files share (rdv_join.c, the join;
 * rdv_client.c, the phases): waiting for rank 0's next frame, and taking
 * its ABORT or REJECT as this rank's verdict. */
#ifndef DISTENV_RDV_CLIENT_H
#define DISTENV_RDV_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "check.h"

/* Rank 0's next frame by deadline (since: when this wait began, for the
 * time the failure states): 0, or -1 with f. */
int de_rdvc_wait_frame(struct de_check *c, int64_t since, int64_t deadline, enum de_msg *type,
		       const uint8_t **frame, size_t *len, struct de_fail *f);
/* Rank 0's ABORT or REJECT as our failure (from_rank0 set); returns -1. */
int de_rdvc_take_abort(const uint8_t *frame, size_t len, struct de_fail *f);

#endif
