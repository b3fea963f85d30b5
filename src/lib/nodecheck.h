/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv-check --node's pure parts: the node record scontrol prints, the
 * GPUs Slurm gave a node, and what --drain does with a verdict. No Slurm
 * calls here: the text comes in. */
#ifndef DISTENV_NODECHECK_H
#define DISTENV_NODECHECK_H

#include <stddef.h>

#include "err.h"

/* Every reason distenv sets starts with it; only such a drain is ours to
 * resume. */
#define DE_DRAIN_PREFIX "distenv:"

/* One node, from `scontrol show node -o NAME`. */
struct de_node_rec {
	char name[128];
	char state[128];  /* "IDLE+DRAIN" */
	char reason[512]; /* without Slurm's " [user@time]"; "" when none */
	char gres[256];   /* "gpu:a100:4(S:0-1)", "(null)"; "" when not shown */
	int drain;        /* state has the DRAIN flag (drained or draining) */
};

/* Parses scontrol's one line per node (the first node of text): 0, or -1
 * with e when it is not a node record. */
int de_node_rec_parse(const char *text, struct de_node_rec *r, struct de_err *e);

/* The GPUs in a node's Gres ("gpu:4", "gpu:a100:2(S:0),gpu:v100:2(S:1)",
 * "gpu:1,mps:100", "(null)"): their sum in *n. 0, or -1 with e. */
int de_gres_gpus(const char *gres, unsigned *n, struct de_err *e);

/* Entries of a device list as Slurm sets it (SLURM_JOB_GPUS "0,1",
 * CUDA_VISIBLE_DEVICES "0,1" or "GPU-uuid,..."): their count in *n; "" and
 * Slurm's "NoDevFiles" are none. 0, or -1 with e (an empty entry). */
int de_device_list_count(const char *what, const char *s, unsigned *n, struct de_err *e);

enum de_drain_act {
	DE_DRAIN_NOTHING, /* passed, not drained: nothing to do */
	DE_DRAIN_SET,     /* failed: drain with our reason (or update ours) */
	DE_DRAIN_SAME,    /* failed, already drained by us for this reason */
	DE_DRAIN_OTHER,   /* drained for a reason not ours: never touched */
	DE_DRAIN_RESUME,  /* passed, drained by us: resume */
};

/* What --drain does: failed is the check's verdict, r the node now,
 * reason the one we would set. */
enum de_drain_act de_drain_decide(int failed, const struct de_node_rec *r, const char *reason);

/* The reason we set: "distenv: DIAG: MSG", one line, no double quotes
 * (the reason travels in scontrol's argument and sinfo's columns), cut
 * to len. */
void de_drain_reason(const char *diag, const char *msg, char *out, size_t len);

#endif
