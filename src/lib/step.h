/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Slurm's special step ids, named once for all of distenv.
 *
 * The values are slurm.h's SLURM_PENDING_STEP, SLURM_EXTERN_CONT,
 * SLURM_BATCH_SCRIPT and SLURM_INTERACTIVE_STEP as of Slurm 20.11; the
 * 22.05, 24.11 and 26.05 headers agree. They are our own constants because
 * src/lib never includes slurm.h, and because they moved before (up to
 * 20.02 the batch step was 0xfffffffe and the extern step 0xffffffff): the
 * plugin, built against the real slurm.h, asserts at compile time that they
 * still match (spank/stepd.c). */
#ifndef DISTENV_STEP_H
#define DISTENV_STEP_H

#define DE_STEP_PENDING     0xFFFFFFFDu /* SLURM_PENDING_STEP */
#define DE_STEP_EXTERN      0xFFFFFFFCu /* SLURM_EXTERN_CONT: no user tasks */
#define DE_STEP_BATCH       0xFFFFFFFBu /* SLURM_BATCH_SCRIPT */
#define DE_STEP_INTERACTIVE 0xFFFFFFFAu /* SLURM_INTERACTIVE_STEP */

/* port.c gives every id from here up one of the last port slots. Below
 * Slurm's lowest special id (0xfffffffa) and above its highest normal one
 * (SLURM_MAX_NORMAL_STEP_ID, 0xfffffff0); it stays where it always was so
 * that no job's MASTER_PORT changes. */
#define DE_STEP_SPECIAL_MIN 0xFFFFFFF8u

/* A step whose tasks are the job's ranks (not batch, interactive or extern). */
#define DE_STEP_HAS_RANKS(id) \
	((id) != DE_STEP_BATCH && (id) != DE_STEP_INTERACTIVE && (id) != DE_STEP_EXTERN)

#endif
