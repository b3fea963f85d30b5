/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Socket helpers for distenv-check: every call that can block takes an
 * absolute deadline (monotonic milliseconds) and never waits past it. */
#ifndef DISTENV_NET_H
#define DISTENV_NET_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "err.h"
#include "proto.h"

int64_t de_now_ms(void);
int64_t de_now_us(void);

struct de_addr {
	struct sockaddr_storage ss;
	socklen_t len;
};

int de_resolve(const char *host, uint16_t port, struct de_addr *out,
	       struct de_err *err);
int de_addr_is_loopback(const struct de_addr *a);
/* Numeric address, without the port. */
void de_addr_str(const struct de_addr *a, char *buf, size_t len);
uint16_t de_addr_port(const struct de_addr *a);
void de_addr_set_port(struct de_addr *a, uint16_t port);

/* A listening socket on a (its port may be 0: the kernel picks). */
int de_listen(struct de_addr *a, int backlog, struct de_err *err);
/* The node probe's listener on a's address, its own port (in *port): a
 * probe is a connection and a reset. The kernel answers it alone
 * (TCP_DEFER_ACCEPT: a connection that sends nothing never becomes a
 * socket), so nothing is accepted, per probe, on either side. */
int de_listen_probe(const struct de_addr *a, uint16_t *port, struct de_err *err);

/* The next connection waiting on the nonblocking listener lfd, itself
 * nonblocking and close-on-exec, its peer in *from (from may be NULL);
 * -1 when none is waiting or accept failed: the event loops (rank 0's
 * server, the data port) try again on the next event. */
int de_accept(int lfd, struct de_addr *from);

enum de_conn {
	DE_CONN_OK,
	DE_CONN_REFUSED,  /* RST: nothing listening, or a REJECT rule */
	DE_CONN_TIMEOUT,  /* no answer by the deadline: dropped */
	DE_CONN_UNREACH,  /* no route / host unreachable */
	DE_CONN_ERROR,
};
/* One nonblocking connect attempt bounded by deadline. */
enum de_conn de_connect(const struct de_addr *a, int64_t deadline, int *fd,
			int *err_no);
const char *de_conn_name(enum de_conn c);

/* Interface choice for the data listener. spec follows NCCL_SOCKET_IFNAME:
 * "eth" matches by prefix, "=eth0" exactly, "^docker,lo" excludes; a comma
 * list. The first matching interface with an address of family wins. */
int de_iface_pick(const char *spec, int family, struct de_addr *out,
		  char *ifname, size_t ifname_len, struct de_err *err);
/* The local address and interface the kernel would use to reach dst. */
int de_route_source(const struct de_addr *dst, struct de_addr *out,
		    char *ifname, size_t ifname_len, struct de_err *err);

/* An interface's MTU (0 unknown). */
int de_iface_mtu(const char *ifname);
/* The interface that holds a's host address, its name and flags
 * (IFF_UP, IFF_RUNNING, ...): 1; 0 when none has it; -1 with err. have
 * gets the interfaces and addresses of a's family there are, for the
 * message ("eth0 10.0.0.5, lo 127.0.0.1"). */
int de_addr_iface(const struct de_addr *a, char *ifname, size_t ifname_len, unsigned *flags,
		  char *have, size_t have_len, struct de_err *err);
/* An interface's flags: 0, or -1 with err when there is none of that name. */
int de_iface_flags(const char *ifname, unsigned *flags, struct de_err *err);

/* Tuning for bulk data connections. */
void de_sock_tune(int fd);
int de_set_nonblock(int fd, int on);

/* Send all of buf or fail by deadline (-1: errno set, ETIMEDOUT on deadline). */
int de_send_all(int fd, const void *buf, size_t len, int64_t deadline);

/* Reads one frame from a blocking-or-not fd by deadline. rb accumulates
 * bytes between calls (several frames may arrive at once). Returns 1 with
 * the frame in frame and len (valid until the next call), 0 on EOF, -1 on
 * error (err says: bad frame, timeout, reset). */
struct de_rbuf {
	uint8_t *data;
	size_t len, cap, consumed;
};
int de_recv_frame(int fd, struct de_rbuf *rb, uint32_t max, int64_t deadline,
		  enum de_msg *type, const uint8_t **frame, size_t *len,
		  struct de_err *err);
/* Nonblocking variant for event loops: reads what is there, returns 1 if
 * a frame is complete, 0 if more is needed, -1 bad frame, -2 EOF/reset. */
int de_rbuf_fill(int fd, struct de_rbuf *rb, uint32_t max, enum de_msg *type,
		 const uint8_t **frame, size_t *len, struct de_err *err);
void de_rbuf_free(struct de_rbuf *rb);

#endif
