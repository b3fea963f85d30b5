/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one builder of hand-made protocol frames for the tests: sample
 * messages, fields set by name, and frames the encoders refuse to write
 * (a header alone, a payload given byte by byte), all made with
 * src/lib/proto.c's encoders and constants. de-frame (the command the
 * cluster and sanitizer tests call), gen-proto-corpus (the fuzz seeds)
 * and the unit tests use it, so a protocol change is one edit there. */
#ifndef DISTENV_TEST_FRAMES_H
#define DISTENV_TEST_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "proto.h"

/* Rank 1 of 2 on node2, 10.77.0.12, no proof. */
void frames_sample_hello(struct de_hello *h);
/* A ring connection's first frame from rank 2, no proof. */
void frames_sample_data(struct de_data_hello *d);

/* Sets the field named key (its name in proto.h: token, rank, world,
 * local_rank, local_world, node_rank, pid, backend, port, probe_port,
 * host, addr, iface, params, failed, why, nonce (hex), auth). */
int frames_hello_set(struct de_hello *h, const char *key, const char *val, struct de_err *err);
/* token, rank, purpose (a name or a number), mac (hex). */
int frames_data_set(struct de_data_hello *d, const char *key, const char *val, struct de_err *err);

/* A header alone: magic, version, type, a payload length nothing follows. */
void frames_header(struct de_buf *b, uint16_t version, uint16_t type, uint32_t len);
/* A whole frame of this protocol around payload bytes given as hex. */
int frames_raw(struct de_buf *b, uint16_t type, const char *hex, struct de_err *err);

/* A message type by its name (HELLO, REJECT, ..., case-insensitive) or
 * number; -1 for neither. */
int frames_msg_type(const char *s);

#endif
