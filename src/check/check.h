/* SPDX-License-Identifier: GPL-2.0-or-later */
/* distenv-check: the state of one rank, in parts that each module reads:
 * the options (options.c), who this rank is (identity.c, from the environment
 * once), its credentials (auth.c), its rendezvous link and data listener
 * (rdv_client.c, socket.c), the data port's acceptor (acceptor.c) and the
 * chosen backend's own state, which only that backend reads. */
#ifndef DISTENV_CHECK_H
#define DISTENV_CHECK_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "backend_id.h"
#include "fail.h"
#include "net.h"
#include "proto.h"
#include "rdouble.h" /* DE_RD_MAX_PEERS */
#include "ring.h" /* enum de_dtype */

struct de_opts {
	enum de_backend backend; /* never DE_BACKEND_OFF */
	int timeout_s;
	int bench;
	size_t min_bytes, max_bytes; /* -b, -e, --sizes */
	unsigned factor;             /* -f */
	int iters, warmup;
	enum de_dtype dtype;
	int json, quiet, verbose;
	const char *summary; /* --json-summary FILE, rank 0 writes */
	int insecure;
	int pairs;             /* --pairs: the pair matrix instead of the allreduce */
	size_t pair_bytes;     /* --pair-bytes, each direction */
	double pair_threshold; /* --pair-threshold, x the median pair */
	const char *pairs_out; /* --pairs-out DIR, rank 0 writes */
	int timeout_given;     /* --timeout on the command line (--node's default is shorter) */
	int node;              /* --node: this node alone (node.c) */
	int drain;             /* --drain: --node drains/resumes this node by scontrol */
	uint16_t port_lo, port_hi; /* --port-range: the plugin's MASTER_PORT range */
	int gpus;              /* --gpus: the GPUs this node must show, -1 unset */
	const char *scontrol;  /* --scontrol PATH, or NULL: found on PATH */
};

/* Who this rank is and which launch it belongs to. */
struct de_ident {
	uint32_t rank, world, local_rank, local_world, node_rank;
	int have_local_rank, have_local_world, have_node_rank; /* set in the environment */
	long spin_us;           /* DISTENV_SPIN_US, -1 unset (the socket backend's spin) */
	int have_rank;   /* RANK read: until then this process is no rank, not rank 0 */
	/* DISTENV_SIMULATED: distenv-simulate's pseudo-nodes, all on this one
	 * host through 127.0.0.1 by design: the loopback checks are for
	 * real nodes. */
	int simulated;
	uint32_t nnodes; /* from Slurm/torchrun when known, else 0 */
	char host[DE_PROTO_MAX_STR + 1];
	char master[DE_PROTO_MAX_STR + 1];
	uint16_t master_port;
	char token[DE_PROTO_MAX_TOKEN + 1];
	char params[DE_PROTO_MAX_STR + 1]; /* the collective: every rank must agree */
	const char *env_source; /* "torchrun environment" or "SLURM_* variables" */
	const char *nodelist;   /* the step's nodes when known (diagnoses) */
	char **expect_host;     /* rank -> host Slurm placed it on, or NULL */
};

/* Addresses, the data listener and the rendezvous connection. */
struct de_link {
	struct de_addr master_addr, data_addr;
	char iface[64], iface_how[128];
	int data_fd;
	int probe_fd;       /* the node probe's listener (net.h), on data_addr's address */
	uint16_t probe_port; /* its port */
	int rdv_fd;
	struct de_rbuf rdv_rb;
	double rdv_ms, probe_ms, connect_ms, check_ms; /* how long each part took here */
};

/* The data port's acceptor thread (acceptor.c). It answers callers once
 * the session key is here, and keeps the ring connection our left
 * neighbour makes, which may come before our backend asks for it
 * (de_acceptor_take_left). */
struct de_acceptor_state {
	pthread_t thread;
	int running;
	volatile int stop;
	pthread_mutex_t mu;      /* guards key_ready, left_fd, left_taken, rd_* */
	pthread_cond_t cv;
	int key_ready;           /* the session key is in auth */
	int left_fd;             /* from rank-1 (DE_PURPOSE_RING), -1 until it arrives */
	int left_taken;          /* the backend has left_fd: not ours to close */
	/* Recursive doubling's links from lower ranks (DE_PURPOSE_RD), in
	 * arrival order; rd_taken's bit i: rd_fd[i] is the backend's. */
	uint32_t rd_rank[DE_RD_MAX_PEERS];
	int rd_fd[DE_RD_MAX_PEERS];
	unsigned rd_n, rd_taken;
};

struct de_backend_ops;
struct de_pairs_state;

struct de_check {
	struct de_opts o;
	struct de_ident id;
	struct de_auth auth;
	struct de_link net;
	struct de_acceptor_state acc;
	struct de_peers peers;   /* the job's table, from rank 0 */
	int nphases;             /* phases after the peer table: probe + collectives */
	const struct de_backend_ops *be; /* resolved backend */
	void *bstate;            /* be's own state: made by its init, freed by its fini */
	char device[64];         /* "cpu" or "cuda:0" */
	struct de_pairs_state *pairs; /* --pairs only (pairs.h) */
	int64_t deadline;        /* start + --timeout: every wait ends by it (budget.h) */
};

#endif
