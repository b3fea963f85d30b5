/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The rendezvous at MASTER_ADDR:MASTER_PORT: rank 0's server
 * (rdv_server.c) and every rank's client (rdv_client.c). */
#ifndef DISTENV_RENDEZVOUS_H
#define DISTENV_RENDEZVOUS_H

#include <stddef.h>
#include <stdint.h>

#include "check.h"

/* rdv_server.c, rank 0 only: serve until the last phase or a verdict. */
int de_rdv_server_start(struct de_check *c, struct de_fail *f);
/* Rank 0 failed before it could join (mine says why): serve only that
 * verdict, to every rank that comes, until all heard it or the timeout;
 * de_rdv_server_stop waits for that. */
int de_rdv_server_doom(struct de_check *c, const struct de_fail *mine);
void de_rdv_server_stop(void);

/* rdv_client.c */
int de_rdv_join(struct de_check *c, struct de_fail *f);
/* This rank failed before it could join (mine says why): tell rank 0,
 * which ends the job with it now rather than at its timeout. Bounded by
 * a few seconds; nothing is returned, our own verdict stands. */
void de_rdv_tell_failure(struct de_check *c, const struct de_fail *mine);
/* One phase: tell rank 0 how it went here (rep: code, value, text and
 * record; its rank is set here); returns 0 on GO (into go, when not
 * NULL), -1 with f set to the job's diagnosis on ABORT. */
int de_rdv_phase_rec(struct de_check *c, struct de_text *rep, struct de_text *go,
		     struct de_fail *f);
/* The same, with a report of text alone, and rank 0's GO unread. */
int de_rdv_phase(struct de_check *c, enum de_diag mine, uint64_t value, const char *text,
		 struct de_fail *f);
/* This rank failed a phase (f says why): tell rank 0, and keep our own
 * diagnosis unless rank 0 answers with the job's verdict. Returns -1.
 * The _rec form reports rep (f's diagnosis with a record) instead. */
int de_rdv_report_failure(struct de_check *c, struct de_fail *f);
int de_rdv_report_failure_rec(struct de_check *c, struct de_text *rep, struct de_fail *f);
/* An ABORT or EOF on the rendezvous connection while a collective runs:
 * 1 if the job is over (f set), 0 if nothing happened. */
int de_rdv_poll_abort(struct de_check *c, struct de_fail *f);

#endif
