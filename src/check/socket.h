/* The TCP data plane every backend shares (socket.c): the acceptor thread
 * for inbound data connections and the node-to-node probe. The socket
 * backend's ring is reached through backend.h. */
#ifndef DISTENV_SOCKET_H
#define DISTENV_SOCKET_H

#include <stddef.h>

#include "check.h"

int de_acceptor_start(struct de_check *c, struct de_fail *f);
void de_acceptor_stop(struct de_check *c);
/* Phase 0: every node reaches the others' data ports; report says which
 * failed ("host (addr:port) how, ..."). */
int de_probe_nodes(struct de_check *c, struct de_fail *f, char *report, size_t len);

#endif
