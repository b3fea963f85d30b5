/* distenv-check: shared state of one rank. main.c fills it, rendezvous.c
 * meets the others, socket.c / nccl.c run the collective. */
#ifndef DISTENV_CHECK_H
#define DISTENV_CHECK_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "net.h"
#include "proto.h"
#include "ring.h"

enum de_backend { DE_BACKEND_AUTO, DE_BACKEND_SOCKET, DE_BACKEND_NCCL };
enum { DE_AUTH_NONE, DE_AUTH_SECRET, DE_AUTH_MUNGE };

struct de_opts {
	enum de_backend backend;
	int timeout_s;
	int bench;
	size_t min_bytes, max_bytes; /* --sizes */
	int iters, warmup;
	enum de_dtype dtype;
	int json, quiet;
	int insecure;
};

/* A failure: the diagnosis and one line about this instance of it. */
struct de_fail {
	enum de_diag diag;
	int from_rank0; /* the job's verdict from rank 0, not our own view */
	char msg[DE_ERR_MAX + 256];
};

int de_fail_set(struct de_fail *f, enum de_diag d, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

struct de_check {
	struct de_opts o;
	/* who we are */
	uint32_t rank, world, local_rank, local_world, node_rank;
	uint32_t nnodes; /* from Slurm/torchrun when known, else 0 */
	char host[DE_PROTO_MAX_STR + 1];
	char master[DE_PROTO_MAX_STR + 1];
	uint16_t master_port;
	char token[DE_PROTO_MAX_TOKEN + 1];
	char params[DE_PROTO_MAX_STR + 1];
	const char *env_source; /* "torchrun environment" or "SLURM_* variables" */
	const char *nodelist;   /* the step's nodes when known (diagnoses) */
	char **expect_host;     /* rank -> host Slurm placed it on, or NULL */
	int nphases;            /* phases after the peer table: probe + collectives */
	/* authentication (auth.c) */
	int auth_mode;          /* DE_AUTH_* */
	uint8_t secret_key[32]; /* from DISTENV_SECRET */
	uint8_t session_key[32];
	int have_session;
	unsigned int uid;
	enum de_backend backend; /* resolved */
	char device[64];          /* "cpu" or "cuda:0" */
	/* where we listen for data connections */
	struct de_addr master_addr, data_addr;
	char iface[64], iface_how[128];
	int data_fd;
	/* rendezvous connection to rank 0 */
	int rdv_fd;
	struct de_rbuf rdv_rb;
	struct de_peers peers;
	double rdv_ms;
	/* the acceptor thread hands over ring connections by caller rank */
	pthread_t acceptor;
	int acceptor_running;
	volatile int stop;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int left_fd;          /* ring connection from rank-1, -1 until it arrives */
	uint32_t left_rank;
	int right_fd;
	int own_cpu;          /* a CPU per local rank: spin without yielding at first */
	uint8_t *ring_tmp;    /* the reduce-scatter's receive buffer, one for every allreduce */
};

/* rendezvous.c */
int de_rdv_server_start(struct de_check *c, struct de_fail *f);
void de_rdv_server_stop(void);
/* What rank 0's server has to say at the end (summary), if any. */
int de_rdv_join(struct de_check *c, struct de_fail *f);
/* One phase: tell rank 0 how it went here; returns 0 on GO (text in
 * go_text), -1 with f set to the job's diagnosis on ABORT. */
int de_rdv_phase(struct de_check *c, enum de_diag mine, uint64_t value,
		 const char *text, char *go_text, size_t go_len,
		 struct de_fail *f);
/* This rank failed a phase (f says why): tell rank 0, and keep our own
 * diagnosis unless rank 0 answers with the job's verdict. Returns -1. */
int de_rdv_report_failure(struct de_check *c, struct de_fail *f);
/* An ABORT or EOF on the rendezvous connection while a collective runs:
 * 1 if the job is over (f set), 0 if nothing happened. */
int de_rdv_poll_abort(struct de_check *c, struct de_fail *f);

/* socket.c: data plane */
int de_acceptor_start(struct de_check *c, struct de_fail *f);
void de_acceptor_stop(struct de_check *c);
int de_probe_nodes(struct de_check *c, struct de_fail *f, char *report, size_t len);
int de_ring_connect(struct de_check *c, struct de_fail *f);
int de_ring_allreduce(struct de_check *c, void *buf, size_t count,
		      enum de_dtype t, struct de_fail *f);
void de_ring_close(struct de_check *c);

#endif
