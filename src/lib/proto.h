/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Rendezvous and data-plane frames. Pure encode/decode with hard limits:
 * the rendezvous port is reachable by anyone on the network, so a decoder
 * never trusts a length, never reads past what it got, and rejects
 * anything that is not exactly a frame of this version.
 *
 * Frame: magic "DENV" (4 bytes), version (u16), type (u16), payload
 * length (u32), payload. Integers big-endian; strings u16 length + bytes,
 * no NUL inside. */
#ifndef DISTENV_PROTO_H
#define DISTENV_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define DE_PROTO_MAGIC 0x44454E56u /* "DENV" */
/* 2: HELLO carries a failure (a rank that failed before it could join).
 * 3: HELLO and PEERS carry the node probe's port.
 * 4: REPORT and GO carry a record (the probe's and the pair sweep's
 *    results, the sweep's rounds) after their text. */
/* 6: the pair record carries the NCCL pair's outcome. */
#define DE_PROTO_VERSION 6
#define DE_PROTO_HDR 12
/* What a peer may send to rank 0: small (a text and a record). Only rank
 * 0's peer table, read by ranks that already trust MASTER_ADDR, may be
 * large. */
#define DE_PROTO_MAX_SMALL 8192u
#define DE_PROTO_MAX_TEXT 4031u
#define DE_PROTO_MAX_PEERS (64u << 20)
#define DE_PROTO_MAX_STR 255u
#define DE_PROTO_MAX_TOKEN 128u
/* A failed rank's own account in its HELLO; the largest HELLO (MUNGE
 * credential included) stays within DE_PROTO_MAX_SMALL. */
#define DE_PROTO_MAX_WHY 512u
#define DE_PROTO_MAX_WORLD (1u << 20)
#define DE_NCCL_ID_BYTES 128u
#define DE_NONCE_BYTES 16u
#define DE_MAC_BYTES 32u
/* A MUNGE credential (base64) or an HMAC in hex. */
#define DE_PROTO_MAX_AUTH 2048u

enum de_msg {
	DE_MSG_HELLO = 1,   /* rank -> rank 0: who I am, where my data port is */
	DE_MSG_REJECT = 2,  /* rank 0 -> a connection it will not take (foreign job, bad frame) */
	DE_MSG_PEERS = 3,   /* rank 0 -> all: the validated world */
	DE_MSG_ABORT = 4,   /* either way: the job cannot go on, and why */
	DE_MSG_REPORT = 5,  /* rank -> rank 0: result of a phase (probe, collective) */
	DE_MSG_GO = 6,      /* rank 0 -> all: phase passed everywhere, go on */
	DE_MSG_DATA = 7,    /* first frame on a data-plane connection: who is calling */
	DE_MSG_CHALLENGE = 8, /* the accepting side's fresh nonce, sent first */
};

/* What a data connection is for: DATA says it, its proof covers it. */
enum de_purpose {
	DE_PURPOSE_RING = 2, /* the ring's link to the next rank */
	DE_PURPOSE_BULK = 3, /* the node probe's 64 KiB echo */
	DE_PURPOSE_PAIR = 4, /* the pair sweep: a command (de_pair_cmd) follows */
	DE_PURPOSE_RD = 5,   /* a recursive doubling link (rdouble.h) to a higher rank */
};

struct de_hello {
	char token[DE_PROTO_MAX_TOKEN + 1]; /* job/step identity: other jobs are turned away */
	uint32_t rank, world, local_rank, local_world, node_rank;
	uint32_t pid;
	uint8_t backend; /* what this rank will run, so a mix is caught */
	uint16_t port;   /* data listener */
	uint16_t probe_port; /* node probe listener (connect and reset only) */
	char host[DE_PROTO_MAX_STR + 1];
	char addr[DE_PROTO_MAX_STR + 1]; /* data listener address (numeric) */
	char iface[DE_PROTO_MAX_STR + 1];
	char params[DE_PROTO_MAX_STR + 1]; /* collective parameters: all ranks must agree */
	/* Non-zero: this rank failed before it could join (a diagnosis code)
	 * and why says how; rank 0 ends the job with it at once. */
	uint16_t failed;
	char why[DE_PROTO_MAX_WHY + 1];
	uint8_t nonce[DE_NONCE_BYTES];     /* ours: rank 0's answer is bound to it */
	char auth[DE_PROTO_MAX_AUTH + 1];  /* proof over token, rank, both nonces */
};

struct de_peer {
	uint32_t rank, local_rank, node; /* node: index of its host in the table's host order */
	uint16_t port, probe_port;
	char host[DE_PROTO_MAX_STR + 1];
	char addr[DE_PROTO_MAX_STR + 1];
};

struct de_peers {
	uint32_t world;
	struct de_peer *peer; /* world entries, by rank (decode allocates) */
	uint16_t nccl_id_len; /* 0 or DE_NCCL_ID_BYTES */
	uint8_t nccl_id[DE_NCCL_ID_BYTES];
	/* rank 0's proof for this rank: binds the table, the rank's nonce and
	 * carries the session key (MUNGE credential restricted to the job's
	 * uid, or an HMAC with the shared secret). Not covered by itself. */
	char auth[DE_PROTO_MAX_AUTH + 1];
};

/* The records REPORT and GO carry after their text (DE_REC_NONE in
 * REJECT and ABORT, and wherever the text says it all). */
enum de_rec {
	DE_REC_NONE = 0,
	DE_REC_UNREACHED = 1, /* REPORT of the node probe: the ranks it failed to reach */
	DE_REC_PAIR = 2,      /* REPORT of a sweep round: the pair this node measured */
	DE_REC_ROUND = 3,     /* GO of the sweep: what comes next */
	DE_REC_EXCLUDE = 4,   /* ABORT: the nodes at fault, for srun/sbatch --exclude= */
};
/* One record's lists, at most: rank 0 keeps each rank's last report, so
 * these are bytes per rank there. The probe's words name fewer nodes than
 * its list; a retest round takes no more jobs (de_pairs_pack). */
#define DE_PROTO_MAX_UNREACHED 256u
#define DE_PROTO_MAX_JOBS 256u

struct de_pair_rec { /* why it failed, if it did: the text */
	uint32_t a, b;       /* nodes (indices in the peer table's host order): a called b */
	uint16_t diag;       /* DE_OK or why the pair failed */
	double bw_ab, bw_ba; /* bytes/s each way */
	double rtt_us;
	uint8_t nccl;        /* enum de_pair_nccl: the pair's NCCL allreduce */
	uint16_t nccl_diag;  /* DE_OK or why it failed (the text then says, when diag is DE_OK) */
	double nccl_bw;      /* bytes/s of the 2-rank allreduce (algbw), 0 when failed */
};

enum de_pair_nccl {
	DE_PAIR_NCCL_NONE = 0, /* not measured: the calling node has no usable NCCL */
	DE_PAIR_NCCL_OK = 1,
	DE_PAIR_NCCL_FAIL = 2,
};

enum de_round_kind {
	DE_ROUND_TOURNAMENT = 'T', /* round `round` of the plan: every pair once */
	DE_ROUND_RETEST = 'R',     /* retest round `round` of `of`: the jobs */
	DE_ROUND_END = 'E',        /* the sweep is over; failed: its verdict is not clean */
};

struct de_round_rec {
	uint8_t kind;        /* enum de_round_kind */
	uint32_t round, of;
	uint32_t failed;     /* END: 1 when the sweep found something */
	uint32_t njobs;      /* RETEST: node calls with */
	struct { uint32_t node, with; } job[DE_PROTO_MAX_JOBS];
};

struct de_unreached_rec {
	uint32_t n;
	uint32_t rank[DE_PROTO_MAX_UNREACHED]; /* each the first rank of a node */
};

/* The nodes a verdict blames, as a hostlist expression (node[3,7]);
 * sure = 0 when one of them is at fault and which is not known (both
 * ends of a failing connection). */
struct de_exclude_rec {
	uint8_t sure;
	char hosts[DE_PROTO_MAX_STR + 1];
};

struct de_text { /* REJECT, ABORT, REPORT, GO */
	enum de_msg type; /* set by de_dec_text to the frame's; de_enc_text takes it as an argument */
	uint16_t code; /* REPORT: 0 ok, else a diagnosis code; ABORT: diagnosis code */
	uint32_t rank; /* who it is about (sender for REPORT) */
	uint64_t value; /* REPORT: e.g. #wrong, or a double's bits */
	char text[DE_PROTO_MAX_TEXT + 1];
	uint8_t rec; /* enum de_rec: which of the below */
	union {
		struct de_unreached_rec unreached;
		struct de_pair_rec pair;
		struct de_round_rec round;
		struct de_exclude_rec exclude;
	} r;
};

struct de_data_hello {
	char token[DE_PROTO_MAX_TOKEN + 1];
	uint32_t rank;    /* caller */
	uint8_t purpose;  /* enum de_purpose */
	uint8_t mac[DE_MAC_BYTES]; /* HMAC(session key, the acceptor's challenge, ...) */
};

/* The pair sweep's data connection after DATA: the caller's command and
 * the sink's answer, fixed size (the connection carries nothing else). */
enum de_pair_op {
	DE_PAIR_OP_PING = 1,   /* echo 16-byte messages until EOF */
	DE_PAIR_OP_SINK = 2,   /* receive up to len bytes within the bound, answer */
	DE_PAIR_OP_SOURCE = 3, /* send up to len bytes within the bound */
	DE_PAIR_OP_NCCL = 4,   /* a 2-rank NCCL allreduce of len bytes (pairs_nccl.c) */
};
#define DE_PAIR_CMD_BYTES 16
#define DE_PAIR_ANSWER_BYTES 24
struct de_pair_cmd {
	uint32_t op, bound_ms;
	uint64_t len;
};
struct de_pair_answer { /* bytes moved, of them timed, in usec */
	uint64_t moved, timed, usec;
};
void de_enc_pair_cmd(uint8_t out[DE_PAIR_CMD_BYTES], const struct de_pair_cmd *c);
void de_dec_pair_cmd(const uint8_t in[DE_PAIR_CMD_BYTES], struct de_pair_cmd *c);
void de_enc_pair_answer(uint8_t out[DE_PAIR_ANSWER_BYTES], const struct de_pair_answer *a);
void de_dec_pair_answer(const uint8_t in[DE_PAIR_ANSWER_BYTES], struct de_pair_answer *a);

/* Growable output buffer. */
struct de_buf {
	uint8_t *data;
	size_t len, cap;
	int oom;
};
void de_buf_free(struct de_buf *b);

/* Encoders append one whole frame to b; they return -1 only on a value
 * that does not fit the protocol (err says which) or out of memory. */
int de_enc_hello(struct de_buf *b, const struct de_hello *h, struct de_err *err);
int de_enc_peers(struct de_buf *b, const struct de_peers *p, struct de_err *err);
int de_enc_text(struct de_buf *b, enum de_msg type, const struct de_text *t, struct de_err *err);
int de_enc_data_hello(struct de_buf *b, const struct de_data_hello *d, struct de_err *err);
int de_enc_challenge(struct de_buf *b, const uint8_t nonce[DE_NONCE_BYTES], struct de_err *err);

/* Looks at the start of a byte stream: 0 = need more bytes, 1 = a whole
 * frame of *frame_len bytes is there (its type in *type), -1 = not a
 * valid frame (bad magic/version/type, or payload over max). */
int de_frame_check(const uint8_t *buf, size_t have, uint32_t max_payload,
		   enum de_msg *type, size_t *frame_len, struct de_err *err);

/* Decoders take one whole frame (as de_frame_check delimited it). */
int de_dec_hello(const uint8_t *frame, size_t len, struct de_hello *h, struct de_err *err);
int de_dec_peers(const uint8_t *frame, size_t len, struct de_peers *p, struct de_err *err);
void de_peers_free(struct de_peers *p);
/* Nodes in the table (1 + the largest node index; 0 when empty). */
uint32_t de_peers_nodes(const struct de_peers *p);
int de_dec_text(const uint8_t *frame, size_t len, struct de_text *t, struct de_err *err);
int de_dec_data_hello(const uint8_t *frame, size_t len, struct de_data_hello *d, struct de_err *err);
int de_dec_challenge(const uint8_t *frame, size_t len, uint8_t nonce[DE_NONCE_BYTES], struct de_err *err);

const char *de_msg_name(enum de_msg type);

/* What the first bytes from a port that does not speak distenv look like,
 * for the diagnosis: "an HTTP server (\"HTTP/1.1 400\")", "an SSH server
 * (\"SSH-2.0-OpenSSH_9.2p1\")", "text \"...\"" or "bytes 16 03 01 ...". */
void de_foreign_describe(const uint8_t *b, size_t n, char *out, size_t len);

#endif
