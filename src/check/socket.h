/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The TCP data plane every backend shares: the acceptor thread for
 * inbound data connections (acceptor.c), the node-to-node probe
 * (probe.c) and the framing of data connections (socket.c). The socket
 * backend's ring is reached through backend.h. */
#ifndef DISTENV_SOCKET_H
#define DISTENV_SOCKET_H

#include <stddef.h>
#include <stdint.h>

#include "check.h"
#include "err.h"

/* The probe's bulk payload: well above any MTU (jumbo frames are 9000),
 * so a path that passes small packets but drops large ones stalls here,
 * named, instead of inside the allreduce until --timeout. */
#define BULK_BYTES (64u << 10)

/* acceptor.c */
int de_acceptor_start(struct de_check *c, struct de_fail *f);
void de_acceptor_stop(struct de_check *c);
/* The session key is in c->auth: callers waiting for it are answered. */
void de_acceptor_key_ready(struct de_check *c);
/* The ring connection our left neighbour made, once it is here (by
 * deadline): the fd, now the caller's to close, or -1. */
int de_acceptor_take_left(struct de_check *c, int64_t deadline);
/* The recursive doubling link rank `from` dialled to us, likewise. */
int de_acceptor_take_rd(struct de_check *c, uint32_t from, int64_t deadline);
/* probe.c. Phase 0: every node reaches the others' data ports; rep is
 * this rank's report: which failed, in words ("host (addr:port) how,
 * ...") and as a record (DE_REC_UNREACHED: their ranks). */
int de_probe_nodes(struct de_check *c, struct de_fail *f, struct de_text *rep);
/* socket.c. Reads exactly one small frame from fd (a peer's hello or
 * challenge): the caller streams data right behind it, and those bytes
 * are not ours to read. 0 with *len, or -1 with err. */
int de_recv_one_frame(int fd, uint8_t *buf, size_t cap, size_t *len,
		      int64_t deadline, struct de_err *err);
/* A DATA hello on fd; with a challenge, it carries the proof of the
 * session key. */
int de_send_data(const struct de_check *c, int fd, uint8_t purpose,
		 const uint8_t *challenge, int64_t deadline);
/* Moves len bytes over a nonblocking fd before deadline: 0 done, -1
 * closed or reset, -2 out of time; *moved counts what got through. */
int de_move_all(int fd, uint8_t *buf, size_t len, int out, int64_t deadline,
		size_t *moved);

#endif
