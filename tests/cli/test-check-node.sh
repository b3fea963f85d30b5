#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# distenv-check --node without a cluster: its usage errors, then each
# finding made for real in network, UTS and mount namespaces of its own
# (root only): a node "nodeT" whose data0 (a veth, 10.99.0.5/24, MTU 1400)
# holds its name's address, with its own /etc/hosts, ephemeral and
# reserved ports (per network namespace), and NCCL/CUDA hidden by a tmpfs
# over their directories. --drain talks to a real slurmctld: that is
# tests/cluster/test-node.sh.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"

build=${DISTENV_BUILD_DIR:-.}
CHECK=$(cd "$build" && pwd)/src/distenv-check
[ -x "$CHECK" ] || tap_skip_all "distenv-check not built at $CHECK"
tmp=$(mktemp -d)
chmod 0755 "$tmp"
trap 'rm -rf "$tmp"' EXIT

# usage ARGS...: "rc=N" and the output of distenv-check ARGS (no environment).
usage() {
	local rc=0 o
	o=$(env -i PATH=/usr/bin:/bin "$CHECK" "$@" 2>&1) || rc=$?
	printf 'rc=%s\n%s\n' "$rc" "$o"
}

# --- usage: exit 2 -------------------------------------------------------------------
tap_like "$(usage --drain)" $'^rc=2\ndistenv-check: --drain, --port-range and --gpus go with --node\n' \
	"--drain without --node: usage, exit 2"
tap_like "$(usage --port-range=20000-29399)" $'^rc=2\ndistenv-check: --drain, --port-range and --gpus go with --node' \
	"--port-range without --node: usage, exit 2"
tap_like "$(usage --node --port-range=29399-20000)" $'^rc=2\ndistenv-check: --port-range "29399-20000": expected 1024 <= LO <= HI <= 65535' \
	"--port-range HI below LO: usage, exit 2"
tap_like "$(usage --node --port-range=20000)" $'^rc=2\ndistenv-check: --port-range "20000": expected LO-HI, e.g. 20000-29399' \
	"--port-range without HI: usage, exit 2"
tap_like "$(usage --node --gpus=many)" $'^rc=2\ndistenv-check: --gpus' "--gpus=many: usage, exit 2"
tap_like "$(usage --node --scontrol=/usr/bin/scontrol)" $'^rc=2\ndistenv-check: --scontrol goes with --node --drain' \
	"--scontrol without --drain: usage, exit 2"
tap_like "$(usage --node --drain --scontrol="$tmp/none")" $'^rc=2\ndistenv-check: --drain: --scontrol '"$tmp"$'/none: not an executable file' \
	"--scontrol naming no program: usage, exit 2"
tap_like "$(usage --node --bench)" $'^rc=2\ndistenv-check: --bench and --node: the node check takes only --drain, --port-range, --gpus, --scontrol, --backend and --timeout' \
	"--node --bench: usage, exit 2"
tap_like "$(usage --json --node)" $'^rc=2\ndistenv-check: --json and --node: ' "--json --node: usage, exit 2"

# --- the findings, in a node of its own ---------------------------------------------------
# The usage checks above ran: what cannot run here is one skip, not a
# plan of 0 (which would contradict the results already printed).
ns_skip=""
if [ "$(id -u)" != 0 ]; then
	ns_skip="the node's own namespaces need root (unshare --net --uts --mount)"
elif ! unshare --net --uts --mount true 2>/dev/null || ! command -v ip >/dev/null; then
	ns_skip="unshare --net --uts --mount or ip(8) not available here"
fi
if [ -n "$ns_skip" ]; then
	tap_skip "every finding made for real in a node's own namespaces" "$ns_skip"
	tap_done
	exit
fi
printf 'hosts: files\n' >"$tmp/nsswitch.conf"
# hosts NAME LINES...: an /etc/hosts for nodeT.
hosts() { local n=$1; shift; printf '%s\n' "127.0.0.1 localhost" "$@" >"$tmp/hosts-$n"; }
hosts ok "10.99.0.5 nodeT"
hosts loopback "127.0.1.1 nodeT"
hosts none
hosts elsewhere "10.99.0.77 nodeT"
hosts slurm "10.99.0.5 nodeT" "10.99.0.6 nodeS"
cat >"$tmp/node" <<'EOF'
#!/bin/sh
# node HOSTS SETUP CMD...: CMD as nodeT in namespaces of its own, after the
# shell commands SETUP (run there).
hosts=$1 setup=$2 dir=$(dirname "$0")
shift 2
exec unshare --net --uts --mount --propagation private sh -c '
	set -e
	ip link set lo up
	ip link add data0 type veth peer name data0p
	ip addr add 10.99.0.5/24 dev data0
	ip link set data0 mtu 1400
	ip link set data0 up
	ip link set data0p up
	# The kernel marks a new link running a moment later (linkwatch, up
	# to a second on a busy machine): wait for it, or the check would
	# see no carrier yet; a link whose peer goes down loses it as late.
	# SETUPs that add a link or take a peer down call it too.
	wait_state() {
		i=0
		until ip -o link show "$1" | grep -q "state $2"; do
			i=$((i + 1))
			[ "$i" -lt 100 ] || break
			sleep 0.05
		done
	}
	wait_state data0 UP
	hostname nodeT
	mount --bind "$0/hosts-$1" /etc/hosts
	mount --bind "$0/nsswitch.conf" /etc/nsswitch.conf
	eval "$2"
	shift 2
	exec "$@"' "$dir" "$hosts" "$setup" "$@"
EOF
chmod +x "$tmp/node"

# node HOSTS SETUP [VAR=VALUE...] [-- ARGS...]: "rc=N" and the output of
# distenv-check --node ARGS as nodeT (only these variables).
node() {
	local h=$1 setup=$2 vars=() rc=0 o
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do vars+=("$1"); shift; done
	[ "${1-}" = -- ] && shift
	o=$("$tmp/node" "$h" "$setup" env -i PATH=/usr/bin:/bin "${vars[@]}" "$CHECK" --node "$@" 2>&1) || rc=$?
	printf 'rc=%s\n%s\n' "$rc" "$o"
}
# one_line OUT REGEX DESC: OUT (from node) is "rc=N" and one line matching REGEX.
one_line() {
	if [ "$(wc -l <<<"$1")" = 2 ] && [[ $1 =~ $2 ]]; then
		tap_ok "$3"
	else
		tap_fail "$3" "$1"
	fi
}
P=$'^rc=1\ndistenv-check: node nodeT: FAIL '

t0=${EPOCHREALTIME/./}
out=$(node ok :)
took=$(((${EPOCHREALTIME/./} - t0) / 1000))
one_line "$out" $'^rc=0\ndistenv-check: node nodeT: OK: nodeT is 10\\.99\\.0\\.5; data interface data0 up, MTU 1400 \\(holds 10\\.99\\.0\\.5\\); MASTER_PORT range 20000-29399 outside the ephemeral ports 32768-60999; no GPU expected$' \
	"a healthy node: one OK line naming its address, data interface, MTU and ports, exit 0"
# How long it took is said, not asserted: speed is a benchmark's, and a
# busy machine must not fail a test (the cluster test shows it too).
tap_diag "a healthy node's check took $took ms here (the namespaces' setup included)"
one_line "$(node loopback :)" "${P}hostname-loopback: this node's name nodeT resolves to 127\\.0\\.1\\.1 \\(loopback\\) -- " \
	"its name on 127.0.1.1: hostname-loopback, exit 1"
one_line "$(node none :)" "${P}hostname-unresolvable: this node's name: cannot resolve \"nodeT\": " \
	"its name not in /etc/hosts: hostname-unresolvable, exit 1"
one_line "$(node elsewhere :)" "${P}hostname-not-local: this node's name nodeT resolves to 10\\.99\\.0\\.77, which no interface of this node has \\(it has: lo 127\\.0\\.0\\.1, data0 10\\.99\\.0\\.5\\) -- " \
	"its name on another machine's address: hostname-not-local, exit 1"
one_line "$(node ok : SLURMD_NODENAME=nodeS)" $'^rc=1\ndistenv-check: node nodeS: FAIL hostname-unresolvable: this node\'s Slurm name \\(SLURMD_NODENAME\\): cannot resolve "nodeS": ' \
	"SLURMD_NODENAME=nodeS, which does not resolve: hostname-unresolvable, the line names nodeS"
one_line "$(node slurm : SLURMD_NODENAME=nodeS)" "${P//nodeT/nodeS}hostname-not-local: this node's Slurm name \\(SLURMD_NODENAME\\) nodeS resolves to 10\\.99\\.0\\.6, which no interface" \
	"SLURMD_NODENAME=nodeS on another address: hostname-not-local"
one_line "$(node ok : SLURMD_NODENAME=)" $'^rc=2\ndistenv-check: node nodeT: FAIL environment: SLURMD_NODENAME is empty' \
	"SLURMD_NODENAME empty: exit 2"

one_line "$(node ok 'ip link set data0 down')" "${P}data-interface: the data interface data0 \\(holds 10\\.99\\.0\\.5\\) is down -- " \
	"data0 down: data-interface, exit 1"
one_line "$(node ok 'ip link set data0p down; wait_state data0 LOWERLAYERDOWN')" "${P}data-interface: the data interface data0 \\(holds 10\\.99\\.0\\.5\\) is up but has no carrier \\(the link is down\\) -- " \
	"data0 up without a carrier (its peer down): data-interface, exit 1"
one_line "$(node ok : DISTENV_SOCKET_IFNAME=ib0)" "${P}data-interface: DISTENV_SOCKET_IFNAME=\"ib0\": no up interface with an IPv4 address matches \"ib0\" " \
	"DISTENV_SOCKET_IFNAME=ib0, not here: data-interface, exit 1"
one_line "$(node ok : DISTENV_SOCKET_IFNAME==lo)" "${P}data-interface: the data interface lo \\(DISTENV_SOCKET_IFNAME==lo\\) is loopback -- " \
	"DISTENV_SOCKET_IFNAME==lo: data-interface (loopback), exit 1"
one_line "$(node ok 'ip link add data1 type veth peer name data1p; ip addr add 10.98.0.5/24 dev data1; ip link set data1 up; ip link set data1p up; wait_state data1 UP' NCCL_SOCKET_IFNAME=data1)" \
	$'^rc=0\ndistenv-check: node nodeT: OK: nodeT is 10\\.99\\.0\\.5; data interface data1 up, MTU [0-9]+ \\(NCCL_SOCKET_IFNAME=data1\\); the name\'s address is on data0; MASTER_PORT' \
	"NCCL_SOCKET_IFNAME=data1: data1 is the data interface, the line says the name is on data0"
one_line "$(node ok : DISTENV_SOCKET_IFNAME=)" $'^rc=2\ndistenv-check: node nodeT: FAIL environment: DISTENV_SOCKET_IFNAME is empty' \
	"DISTENV_SOCKET_IFNAME empty: exit 2"

range=/proc/sys/net/ipv4/ip_local_port_range reserved=/proc/sys/net/ipv4/ip_local_reserved_ports
one_line "$(node ok "echo '20000 40000' >$range")" "${P}ephemeral-ports: the MASTER_PORT range 20000-29399 overlaps this node's ephemeral ports 20000-40000 \\(net\\.ipv4\\.ip_local_port_range\\), 9400 of its ports from 20000 not reserved \\(net\\.ipv4\\.ip_local_reserved_ports\\) -- " \
	"ephemeral ports 20000-40000 over the default range: ephemeral-ports, exit 1"
one_line "$(node ok "echo '20000 40000' >$range; echo 20000-29000 >$reserved")" "${P}ephemeral-ports: .*, 399 of its ports from 29001 not reserved " \
	"... 20000-29000 reserved: 399 ports left, from 29001"
one_line "$(node ok "echo '20000 40000' >$range; echo 20000-29399 >$reserved")" $'^rc=0\ndistenv-check: node nodeT: OK: .*; MASTER_PORT range 20000-29399 inside the ephemeral ports 20000-40000 but reserved \\(net\\.ipv4\\.ip_local_reserved_ports\\); ' \
	"... the whole range reserved: OK, saying so"
one_line "$(node ok "echo '20000 40000' >$range" -- --port-range=12000-12999)" $'^rc=0\ndistenv-check: node nodeT: OK: .*; MASTER_PORT range 12000-12999 outside the ephemeral ports 20000-40000; ' \
	"--port-range=12000-12999 (Slurm's MpiParams=ports) outside them: OK"

# --- GPUs ---------------------------------------------------------------------------
one_line "$(node ok : -- --gpus=0)" $'^rc=0\ndistenv-check: node nodeT: OK: .*; no GPU \\(--gpus=0\\)$' "--gpus=0: no GPU, nothing loaded"
one_line "$(node ok : -- --gpus=2 --backend=socket)" $'^rc=0\ndistenv-check: node nodeT: OK: .*; GPUs not checked \\(--backend=socket\\)$' \
	"--backend=socket: GPUs not checked"
one_line "$(node ok : SLURM_GPUS_ON_NODE=x)" $'^rc=2\ndistenv-check: node nodeT: FAIL environment: SLURM_GPUS_ON_NODE' \
	"SLURM_GPUS_ON_NODE=x: exit 2"
nccl=$(usage --node --gpus=1)
if [[ $nccl == *"built without CUDA/NCCL headers"* ]]; then
	one_line "$(node ok : -- --gpus=1)" "${P}nccl-missing: GPUs expected \\(--gpus=1\\), but this distenv-check was built without CUDA/NCCL headers -- " \
		"--gpus=1, built without NCCL: nccl-missing"
	tap_skip "GPUs expected, libraries hidden: nccl-missing" "built without the CUDA/NCCL headers"
	tap_skip "GPUs expected, no GPU: gpu-count" "built without the CUDA/NCCL headers"
	tap_done
	exit 0
fi
# Where NCCL and the CUDA runtime are here: the loader's cache and the
# directories configure baked in.
dirs=$({
	ldconfig -p 2>/dev/null | sed -n 's/^[[:space:]]*\(libnccl\.so\.2\|libcudart\.so\.[0-9.]*\) .* => //p'
	sed -n 's/^#define DE_\(CUDA\|NCCL\)_LIBDIR "\(.*\)"$/\2/p' "$build/config.h" 2>/dev/null |
		while read -r d; do ls "$d"/libnccl.so.2 "$d"/libcudart.so.[0-9]* 2>/dev/null; done
} | while read -r f; do [ -e "$f" ] && dirname "$(readlink -f "$f")"; done | sort -u | tr '\n' ' ')
hide="for d in $dirs; do mount -t tmpfs none \$d; done"
one_line "$(node ok "$hide" SLURM_JOB_GPUS=0,1)" "${P}nccl-missing: GPUs expected \\(SLURM_JOB_GPUS=0,1\\), but neither NCCL libnccl\\.so\\.2 nor the CUDA runtime libcudart\\.so\\.[0-9.]+ .* loads here: tried libnccl\\.so\\.2 \\(" \
	"SLURM_JOB_GPUS=0,1 (a Prolog's), NCCL and CUDA hidden: nccl-missing naming both, exit 1"
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
	tap_skip "GPUs expected, no GPU: gpu-count" "this machine has a GPU (tests/gpu covers it)"
elif [ -z "$dirs" ]; then
	tap_skip "GPUs expected, no GPU: gpu-count" "libnccl.so.2/libcudart not installed here"
else
	one_line "$(node ok : -- --gpus=1)" "${P}gpu-count: 1 GPU expected \\(--gpus=1\\), CUDA sees 0: cudaGetDeviceCount: " \
		"--gpus=1, libraries here but no GPU: gpu-count, exit 1"
fi
tap_done
