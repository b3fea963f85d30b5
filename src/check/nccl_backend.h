/* The NCCL backend (built only when configure found CUDA + NCCL). The
 * rendezvous, the probe and the verification are the socket path's; only
 * device choice, communicator and collective are NCCL's. */
#ifndef DISTENV_NCCL_BACKEND_H
#define DISTENV_NCCL_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "check.h"

/* Visible GPUs, 0 when none or no driver (then why says so). */
int de_nccl_device_count(char *why, size_t why_len);
/* cudaSetDevice(LOCAL_RANK) after checking it against the visible count;
 * fills c->device ("cuda:N"). */
int de_nccl_select(struct de_check *c, struct de_fail *f);
/* Rank 0: a fresh ncclUniqueId for the peer table. */
int de_nccl_unique_id(uint8_t id[DE_NCCL_ID_BYTES], struct de_fail *f);
/* ncclCommInitRank with the id from c->peers, bounded by the timeout. */
int de_nccl_init(struct de_check *c, struct de_fail *f);
/* Sum-allreduce of count elements of host buffer buf (copied to the GPU
 * and back); *usec is the time of the collective alone. */
int de_nccl_allreduce(struct de_check *c, void *buf, size_t count,
		      enum de_dtype t, int iters, double *usec,
		      struct de_fail *f);
void de_nccl_fini(struct de_check *c);

#endif
