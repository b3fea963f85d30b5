/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Before the rendezvous and right after the join (preflight.c): the
 * checks a rank makes of its own view of the network, and its backend. */
#ifndef DISTENV_CHECK_PREFLIGHT_H
#define DISTENV_CHECK_PREFLIGHT_H

#include "check.h"

/* --backend: auto takes the first usable one, a named one must be built;
 * sets c->be and selects its device. */
int de_choose_backend(struct de_check *c, struct de_fail *f);
/* What can be seen before talking to anyone: loopback, MASTER_ADDR in
 * the step, the data interface; opens the data and probe listeners. */
int de_preflight(struct de_check *c, struct de_fail *f);
/* The data interface named by DISTENV_SOCKET_IFNAME, else
 * GLOO_SOCKET_IFNAME, else NCCL_SOCKET_IFNAME, with an address of family,
 * into c->net (data_addr, iface, iface_how): 1; 0 when none is named; -1
 * with f (diag) when the one named is not here. */
int de_named_iface(struct de_check *c, int family, enum de_diag diag, struct de_fail *f);
/* After the join, where neither Slurm nor torchrun gave the node count:
 * the loopback checks against the peer table's. */
int de_joined_checks(struct de_check *c, struct de_fail *f);

#endif
