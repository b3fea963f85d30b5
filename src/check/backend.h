/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The collective backends, one table each (as nccl-tests' testColl):
 * main.c and modes.c run whichever was chosen through these entries alone. The
 * rendezvous, the node probe and the verification are shared; a backend
 * brings its device, its connections and its allreduce. */
#ifndef DISTENV_BACKEND_H
#define DISTENV_BACKEND_H

#include <stddef.h>

#include "check.h"

struct de_backend_ops {
	const char *name;    /* --backend=NAME, backend= in the rank line */
	enum de_backend id;  /* in HELLO: every rank must run rank 0's */
	/* Can it run on this node? 0 with why filled when not (auto skips it). */
	int (*usable)(struct de_err *why);
	/* Before anyone talks: pick the device, fill c->device. */
	int (*select)(struct de_check *c, struct de_fail *f);
	/* Rank 0, before serving: what the peer table carries for it (or NULL). */
	int (*root_prepare)(struct de_check *c, struct de_fail *f);
	/* After the probe: connect the ring, or make the communicator; its
	 * state goes in c->bstate, which only this backend reads. */
	int (*init)(struct de_check *c, struct de_fail *f);
	/* In-place sum of count elements of host buffer buf across all ranks;
	 * *usec is the time of the collective alone. */
	int (*allreduce)(struct de_check *c, void *buf, size_t count,
			 enum de_dtype t, double *usec, struct de_fail *f);
	/* Frees c->bstate. Safe after any failure, and without init. */
	void (*fini)(struct de_check *c);
	/* After select, for --verbose: what it runs on (or NULL). */
	void (*describe)(char *out, size_t len);
};

extern const struct de_backend_ops de_socket_backend; /* socket.c */
extern const struct de_backend_ops de_nccl_backend;   /* nccl.c, when built with NCCL's headers */

#endif
