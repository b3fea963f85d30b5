/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The bytes under every message of proto.h: big-endian integers, strings
 * as a u16 length and bytes (no NUL inside), written to a growable buffer
 * and read back through a bounded reader that never reads past what it
 * got: a short or oversized field only marks the reader bad. Used by
 * proto.c (frames) and proto_rec.c (records, the pair sweep's messages). */
#ifndef DISTENV_WIRE_H
#define DISTENV_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "proto.h"

void de_w_put(struct de_buf *b, const void *p, size_t n);
void de_w_put_u8(struct de_buf *b, uint8_t v);
void de_w_put_u16(struct de_buf *b, uint16_t v);
void de_w_put_u32(struct de_buf *b, uint32_t v);
void de_w_put_u64(struct de_buf *b, uint64_t v);
/* s, at most max bytes long (else err names what, and nothing is written). */
int de_w_put_str(struct de_buf *b, const char *what, const char *s, size_t max,
		 struct de_err *err);
/* Big-endian integers in place, for fixed-size messages and headers. */
void de_w_wr32(uint8_t *p, uint32_t v);
void de_w_wr64(uint8_t *p, uint64_t v);
uint32_t de_w_rd32(const uint8_t *p);
uint64_t de_w_rd64(const uint8_t *p);

/* Bounded reader over one frame's payload. */
struct de_rd {
	const uint8_t *p;
	size_t left;
	int bad;
};

void de_w_get(struct de_rd *r, void *out, size_t n);
uint8_t de_w_get_u8(struct de_rd *r);
uint16_t de_w_get_u16(struct de_rd *r);
uint32_t de_w_get_u32(struct de_rd *r);
uint64_t de_w_get_u64(struct de_rd *r);
/* A string of at most max bytes into out (max + 1 bytes). */
void de_w_get_str(struct de_rd *r, char *out, size_t max);

/* proto_rec.c, for proto.c's text frames: the record after the text (a
 * record a frame of this type cannot carry is refused: err). */
int de_w_put_rec(struct de_buf *b, enum de_msg type, const struct de_text *t, struct de_err *err);
int de_w_get_rec(struct de_rd *r, enum de_msg type, struct de_text *t, struct de_err *err);

#endif
