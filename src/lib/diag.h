/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The named diagnoses: every way distenv-check can fail, worded in one
 * place. Each has a stable short name (for --json, tests and the
 * troubleshooting docs) and a one-line explanation of what to check. */
#ifndef DISTENV_DIAG_H
#define DISTENV_DIAG_H

enum de_diag {
	DE_OK = 0,
	DE_D_USAGE,            /* bad option or environment value */
	DE_D_ENV,              /* torchrun/Slurm environment missing or inconsistent */
	DE_D_MASTER_RESOLVE,   /* MASTER_ADDR does not resolve */
	DE_D_MASTER_LOOPBACK,  /* MASTER_ADDR is loopback on a multi-node job */
	DE_D_HOST_LOOPBACK,    /* this host's name resolves to loopback (127.0.1.1) */
	DE_D_MASTER_NOT_IN_STEP, /* MASTER_ADDR is not one of the step's nodes */
	DE_D_MASTER_REFUSED,   /* nothing listens on MASTER_ADDR:MASTER_PORT */
	DE_D_MASTER_TIMEOUT,   /* MASTER_ADDR:MASTER_PORT silently drops (firewall) */
	DE_D_PORT_IN_USE,      /* rank 0 cannot listen on MASTER_PORT */
	DE_D_DUP_RANK,         /* two processes claim one RANK */
	DE_D_WORLD_MISMATCH,   /* WORLD_SIZE differs between ranks */
	DE_D_RANK_RANGE,       /* RANK outside 0..WORLD_SIZE-1 */
	DE_D_MISSING_RANKS,    /* ranks never arrived within the timeout */
	DE_D_BACKEND_MISMATCH, /* ranks chose different backends */
	DE_D_PEER_REFUSED,     /* a node refuses connections to a data port */
	DE_D_PEER_TIMEOUT,     /* a node drops inbound data connections (firewall on ephemeral ports) */
	DE_D_PEER_LOST,        /* a peer died or reset mid-collective */
	DE_D_SIZE_MISMATCH,    /* ranks disagree on the buffer size or dtype */
	DE_D_WRONG_RESULT,     /* the allreduce result is wrong */
	DE_D_TIMEOUT,          /* the run did not finish within the timeout */
	DE_D_GPU,              /* GPU selection (LOCAL_RANK vs visible devices) */
	DE_D_NCCL,             /* NCCL/CUDA call failed */
	DE_D_ABORTED,          /* another rank failed; this one stopped on its word */
	DE_D_AUTH,             /* a credential or proof was refused */
	DE_D_INTERNAL,
	/* Appended: the codes travel in frames between ranks of one build,
	 * and the fuzz corpora hold the old numbers. */
	DE_D_LOCAL_RANK,       /* LOCAL_RANK / LOCAL_WORLD_SIZE wrong on a node */
	DE_D_NODE_RANK,        /* NODE_RANK / GROUP_RANK wrong */
	DE_D_NOT_DISTENV,      /* something else answers at MASTER_ADDR:MASTER_PORT */
	DE_D_BULK_STALL,       /* small packets pass, large ones vanish (MTU) */
	DE_D_NCCL_MISSING,     /* --backend=nccl, but libnccl/libcudart not loadable */
	DE_D_GPU_SHARED,       /* two ranks of a node on one GPU (NCCL refuses) */
	DE_D_ENV_VALUE,        /* "environment" too: a variable set, but malformed */
	/* distenv-check --node's own findings about this node: */
	DE_D_HOST_RESOLVE,     /* this host's name does not resolve */
	DE_D_HOST_NOT_LOCAL,   /* it resolves to an address no interface here has */
	DE_D_IFACE,            /* the data interface is missing, down or without carrier */
	DE_D_EPHEMERAL,        /* MASTER_PORT's range overlaps the ephemeral ports */
	DE_D_GPU_COUNT,        /* CUDA sees another number of GPUs than Slurm gave the node */
	DE_D_COUNT
};

/* Short name, e.g. "master-timeout". */
const char *de_diag_name(enum de_diag d);
/* What to check, one sentence. */
const char *de_diag_hint(enum de_diag d);

#endif
