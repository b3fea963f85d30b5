/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include "diag.h"

static const struct {
	const char *name, *hint;
} diags[DE_D_COUNT] = {
	[DE_OK] = { "ok", "" },
	/* Every DE_D_USAGE message names the option, variable or file. */
	[DE_D_USAGE] = { "usage", "fix the option, variable or file named above" },
	/* Two cases, one name: a variable missing (where to get it) or set
	 * but malformed (the value is the problem, not the launcher). */
	[DE_D_ENV] = { "environment", "run under srun with the distenv plugin, under torchrun, or set RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT yourself" },
	[DE_D_MASTER_RESOLVE] = { "master-unresolvable", "MASTER_ADDR must be a host name every node resolves (check /etc/hosts or DNS on this node)" },
	[DE_D_MASTER_LOOPBACK] = { "master-loopback", "MASTER_ADDR is localhost/127.x but the job spans several nodes: each node would form its own world; use the host of rank 0" },
	[DE_D_HOST_LOOPBACK] = { "hostname-loopback", "this node's name resolves to loopback (Debian/Ubuntu's 127.0.1.1 line in /etc/hosts): peers would be told to connect to themselves; map the name to the node's real address" },
	[DE_D_MASTER_NOT_IN_STEP] = { "master-not-in-step", "MASTER_ADDR is not one of this step's nodes: a value from another job or expanded once in the batch script?" },
	[DE_D_MASTER_REFUSED] = { "master-refused", "nothing listens on MASTER_ADDR:MASTER_PORT: rank 0 not started, crashed, or MASTER_ADDR is not rank 0's host" },
	[DE_D_MASTER_TIMEOUT] = { "master-timeout", "connections to MASTER_ADDR:MASTER_PORT are silently dropped: a firewall (host nftables/iptables or the cloud security list) or a wrong address" },
	[DE_D_PORT_IN_USE] = { "port-in-use", "MASTER_PORT is taken on rank 0's host: another job or step, or srun tasks x torchrun processes both starting a master" },
	[DE_D_DUP_RANK] = { "duplicate-rank", "two processes have the same RANK: Slurm variables expanded once in the batch script instead of per task, or srun tasks x torchrun processes" },
	[DE_D_WORLD_MISMATCH] = { "world-size-mismatch", "ranks disagree on WORLD_SIZE: tasks from different launches, or a hard-coded size" },
	[DE_D_RANK_RANGE] = { "rank-out-of-range", "RANK must be in 0..WORLD_SIZE-1" },
	[DE_D_MISSING_RANKS] = { "missing-ranks", "these ranks never reached MASTER_ADDR: not launched, crashed, or their node cannot reach rank 0 (MASTER_ADDR/firewall)" },
	[DE_D_BACKEND_MISMATCH] = { "backend-mismatch", "ranks picked different backends (some nodes have a GPU, some not?): pass --backend explicitly" },
	[DE_D_PEER_REFUSED] = { "peer-refused", "a node refuses TCP connections to another's data port: a firewall REJECT rule, or the process is gone" },
	[DE_D_PEER_TIMEOUT] = { "peer-timeout", "a node silently drops inbound TCP on ephemeral ports while MASTER_PORT works: NCCL and gloo need every node to accept connections from every other; open the cluster subnet in the host firewall and the security list" },
	[DE_D_PEER_LOST] = { "peer-lost", "a peer died or its connection was reset mid-collective: check that rank's output and its node" },
	[DE_D_SIZE_MISMATCH] = { "size-mismatch", "ranks run the collective with different sizes or dtypes: all ranks must pass the same options" },
	[DE_D_WRONG_RESULT] = { "wrong-result", "the allreduce returned a wrong sum: report this with the output of every rank" },
	[DE_D_TIMEOUT] = { "timeout", "the run did not finish within --timeout: a peer is stuck or the network is too slow" },
	[DE_D_GPU] = { "gpu-selection", "each task must pick a GPU it can see: with one visible GPU per task use device 0, not LOCAL_RANK or RANK" },
	[DE_D_NCCL] = { "nccl", "NCCL or CUDA failed: rerun with NCCL_DEBUG=INFO for its own explanation" },
	[DE_D_ABORTED] = { "aborted", "another rank failed first: see its diagnosis" },
	[DE_D_AUTH] = { "authentication", "a credential was refused: every rank must run as the same user (MUNGE) or share the same DISTENV_SECRET (or its step's DISTENV_STEP_SECRET), and talk to its own job's rank 0" },
	[DE_D_INTERNAL] = { "internal", "a bug in distenv-check: please report it" },
	[DE_D_LOCAL_RANK] = { "local-rank", "LOCAL_RANK must be 0..k-1 for the k tasks of each node and LOCAL_WORLD_SIZE k: let the plugin or torchrun set them, or use SLURM_LOCALID in each task" },
	[DE_D_NODE_RANK] = { "node-rank", "NODE_RANK/GROUP_RANK must be one value per node, a different one on each, 0..nodes-1 (SLURM_NODEID per task; the plugin sets it)" },
	[DE_D_NOT_DISTENV] = { "not-distenv", "another program listens on MASTER_ADDR:MASTER_PORT (a web server, sshd, a leftover job or torchrun's store): pick a free MASTER_PORT or stop that program" },
	[DE_D_BULK_STALL] = { "bulk-stall", "small packets pass but large ones vanish between these nodes: an MTU mismatch (jumbo frames on the hosts, not on the switch or tunnel); test with ping -M do -s 8972 PEER (and -s 1472), then set the interface MTU to what the path carries" },
	[DE_D_NCCL_MISSING] = { "nccl-missing", "the NCCL backend loads libnccl.so.2 and CUDA's runtime when asked for: install NCCL and the CUDA runtime on this node (or put them on LD_LIBRARY_PATH), or use --backend=socket" },
	[DE_D_GPU_SHARED] = { "shared-gpu", "every task sees the same GPUs and picks the same one (CUDA_VISIBLE_DEVICES set once for the whole job, or no GPU binding): give each task its own GPU (--gpus-per-task=1, or --gpu-bind=single:1), or with all of a node's GPUs visible use cuda:LOCAL_RANK" },
	[DE_D_HOST_RESOLVE] = { "hostname-unresolvable", "this node's own name must resolve on this node (/etc/hosts or DNS) to its address on the cluster network: gloo and PyTorch's rendezvous advertise it, and MASTER_ADDR is a node's name" },
	[DE_D_HOST_NOT_LOCAL] = { "hostname-not-local", "this node's name resolves to an address that is not this node's (a stale /etc/hosts line or DNS record, an image copied from another node): peers would connect to another machine; map the name to this node's own address" },
	[DE_D_IFACE] = { "data-interface", "the data interface (DISTENV_SOCKET_IFNAME, else the one that holds the address of this node's name) must be up with a carrier: see ip link show; check its configuration, cable and switch port" },
	[DE_D_EPHEMERAL] = { "ephemeral-ports", "an outgoing connection may take a job's MASTER_PORT: keep net.ipv4.ip_local_port_range apart from distenv's MASTER_PORT range (plugstack port_min..port_max, or Slurm's MpiParams=ports), or reserve that range in net.ipv4.ip_local_reserved_ports" },
	[DE_D_GPU_COUNT] = { "gpu-count", "CUDA does not see the GPUs Slurm gave this node: a GPU fell off the bus or its driver failed (nvidia-smi; dmesg for Xid errors), or the node's Gres in slurm.conf/gres.conf does not match its hardware" },
	[DE_D_ENV_VALUE] = { "environment", "the variable is set, but empty or malformed: give it the form named above, or unset it (in a Slurm step the missing torchrun variables are derived from SLURM_*)" },
};

const char *de_diag_name(enum de_diag d)
{
	return (unsigned)d < DE_D_COUNT ? diags[d].name : "unknown";
}

const char *de_diag_hint(enum de_diag d)
{
	return (unsigned)d < DE_D_COUNT ? diags[d].hint : "";
}
