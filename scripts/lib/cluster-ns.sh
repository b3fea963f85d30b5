# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# cluster-ns.sh: the namespaces of distenv-cluster's nodes: the bridge and
# veths, the holder processes that keep each node's namespaces open, running
# commands inside them, the processes that are ours (pid files checked
# against /proc), and down, which stops and removes all of it. Sourced by
# scripts/distenv-cluster; functions only.

# ---------------------------------------------------------------------------
# processes

# pid_of NAME EXE: the pid in $RUN/NAME.pid if that process is alive and runs
# EXE (guards against a stale pid file whose pid was reused).
pid_of() {
	local f=$RUN/$1.pid pid exe
	[[ -s $f ]] || return 1
	read -r pid <"$f" || return 1
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
	exe=${exe% (deleted)}
	exe=${exe##*/}
	# Debian installs the Slurm daemons as slurmctld-wlm / slurmd-wlm.
	[[ $exe == "$2" || $exe == "$2-wlm" ]] || return 1
	echo "$pid"
}

holder_pid() { pid_of "holder-$1" sleep; }

# Start time of PID (field 22 of /proc/PID/stat), to tell a process from a
# later one that reused its pid.
start_time() {
	local st rest
	read -r st <"/proc/$1/stat" 2>/dev/null || return 1
	rest=${st##*) }
	# shellcheck disable=SC2086 # split the fields on purpose
	set -- $rest
	echo "${20}"
}

# Commands run by `exec` (srun, sbatch, ...) register as $RUN/exec-PID.pid
# ("PID STARTTIME"): `down` kills them and their descendants, since an srun
# whose cluster vanished waits forever.
exec_pids() {
	local f pid st
	[[ -d $RUN ]] || return 0
	for f in "$RUN"/exec-*.pid; do
		[[ -e $f ]] || continue
		read -r pid st <"$f" || true
		if [[ $pid =~ ^[0-9]+$ && $(start_time "$pid" 2>/dev/null) == "$st" ]]; then
			echo "$pid"
		else
			rm -f -- "$f"
		fi
	done
}

# PIDS and all their descendants.
with_descendants() {
	(($#)) || return 0
	ps -e -o pid=,ppid= | awk -v roots="$*" '
		BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
		{ parent[$1] = $2 }
		END {
			do {
				grew = 0
				for (p in parent)
					if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grew = 1 }
			} while (grew)
			for (p in keep) print p
		}'
}

# Namespaces we own, from `ip netns list`.
our_netns() {
	ip netns list 2>/dev/null | awk -v p="$PFX" 'index($1, p) == 1 { print $1 }'
}

ns_pids() { ip netns pids "$1" 2>/dev/null || true; }

# Every daemon/holder pid we recorded (validated).
recorded_pids() {
	local f name exe
	[[ -d $RUN ]] || return 0
	for f in "$RUN"/*.pid; do
		[[ -e $f ]] || continue
		name=${f##*/}
		name=${name%.pid}
		case $name in
		munged) exe=munged ;;
		sackd) exe=sackd ;;
		slurmctld) exe=slurmctld ;;
		slurmd-*) exe=slurmd ;;
		holder-*) exe='sleep' ;;
		*) continue ;;
		esac
		pid_of "$name" "$exe" || true
	done
	# A sackd whose pid was not recorded yet (an up that failed early).
	sackd_find || true
}

# ---------------------------------------------------------------------------
# the network, the holders, commands inside a node

setup_network() { # NODES
	local n=$1 i name addr
	ip link add "$BRIDGE" type bridge stp_state 0 forward_delay 0
	ip addr add "$LOGIN_ADDR/24" dev "$BRIDGE"
	ip link set "$BRIDGE" up
	for ((i = 0; i <= n; i++)); do
		if ((i == 0)); then
			name=ctl addr=$CTL_ADDR
		else
			name=node$i addr=$(node_addr "$i")
		fi
		ip netns add "$PFX$name"
		ip link add "$PFX$name" type veth peer name eth0 netns "$PFX$name"
		ip link set "$PFX$name" master "$BRIDGE" up
		ip -n "$PFX$name" addr add "$addr/24" dev eth0
		ip -n "$PFX$name" link set eth0 up
		ip -n "$PFX$name" link set lo up
	done
}

# Start the holder of NAME's namespaces: a process in the netns, with its own
# UTS (hostname NAME) and mount namespace (private /etc/hosts, nsswitch.conf).
# It writes its pid file once set up, then becomes `sleep infinity`.
start_holder() { # NAME
	local name=$1
	if [[ -n $ROOT ]]; then
		# With a root: the same namespaces, then the root's mounts inside
		# them (holder_main). "login" has a mount namespace only: the root
		# network namespace is the login host.
		if [[ $name == login ]]; then
			setsid unshare --mount --propagation private -- \
				"$SELF" _holder "$name" "$ROOT" \
				</dev/null >>"$LOG/holder-$name.log" 2>&1 9<&- &
		else
			setsid nsenter --net="/run/netns/$PFX$name" -- \
				unshare --uts --mount --propagation private -- \
				"$SELF" _holder "$name" "$ROOT" \
				</dev/null >>"$LOG/holder-$name.log" 2>&1 9<&- &
		fi
		return
	fi
	# shellcheck disable=SC2016 # expanded by the inner sh
	setsid nsenter --net="/run/netns/$PFX$name" -- \
		unshare --uts --mount --propagation private -- \
		/bin/sh -c 'set -e
			echo "$1" >/proc/sys/kernel/hostname
			mount --bind "$2/hosts" /etc/hosts
			mount --bind "$2/nsswitch.conf" /etc/nsswitch.conf
			echo $$ >"$3.tmp"
			mv -f "$3.tmp" "$3"
			exec sleep infinity' holder "$name" "$D" "$RUN/holder-$name.pid" \
		</dev/null >>"$LOG/holder-$name.log" 2>&1 9<&- &
}

wait_holders() { # NAMES...
	local name deadline=$((SECONDS + 10))
	for name in "$@"; do
		until holder_pid "$name" >/dev/null; do
			if ((SECONDS >= deadline)); then
				cat "$LOG/holder-$name.log" >&2 2>/dev/null || true
				die "namespace holder for $name did not start"
			fi
			sleep 0.01
		done
	done
}

# Run a command (a daemon that forks) inside NAME's namespaces.
in_ns() { # NAME CMD...
	local name=$1 pid
	shift
	pid=$(holder_pid "$name") || die "$name: namespace holder is not running"
	if [[ -n $ROOT ]]; then
		in_root_words /
		set -- "${ROOT_WORDS[@]}" "$@"
	fi
	if [[ $name == login ]]; then
		nsenter --target "$pid" --mount -- "$@" 9<&-
	else
		nsenter --target "$pid" --net --uts --mount -- "$@" 9<&-
	fi
}

# `_holder NAME ROOT`, run by start_holder inside NAME's fresh namespaces:
# hostname, the root's mounts, the pid file, then sleep to hold them.
holder_main() {
	local name=$1 root=$2 hosts=$D/hosts
	if [[ $name == login ]]; then
		hosts=$D/login-hosts
	else
		echo "$name" >/proc/sys/kernel/hostname
	fi
	root_mounts "$root" "$hosts"
	echo $$ >"$RUN/holder-$name.pid.tmp"
	mv -f "$RUN/holder-$name.pid.tmp" "$RUN/holder-$name.pid"
	exec sleep infinity
}

# ---------------------------------------------------------------------------
# down

do_down() {
	local ns pids=() p deadline left name any=0

	# 1. TERM the daemons and holders we recorded, all at once (each takes
	#    ~2 s to exit). Not the rest of the namespaces yet: slurmctld must
	#    stop its slurmscriptd itself (killing that first makes it hang), and
	#    slurmstepd ignores TERM anyway.
	mapfile -t pids < <(recorded_pids)
	if ((${#pids[@]})); then
		any=1
		kill -TERM "${pids[@]}" 2>/dev/null || true
		deadline=$((SECONDS + 5))
		while ((SECONDS < deadline)); do
			left=0
			for p in "${pids[@]}"; do
				alive "$p" && { left=1; break; }
			done
			((left)) || break
			sleep 0.05
		done
	fi

	# 2. KILL what remains: leftovers of the recorded pids, clients started
	#    by `exec` (and their children), and everything still inside our
	#    namespaces (slurmstepd, tasks): all of it is ours.
	for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
		pids=()
		mapfile -t pids < <(recorded_pids)
		# shellcheck disable=SC2046 # a list of pids
		mapfile -t -O "${#pids[@]}" pids < <(with_descendants $(exec_pids))
		for ns in $(our_netns); do
			any=1
			mapfile -t -O "${#pids[@]}" pids < <(ns_pids "$ns")
		done
		((${#pids[@]})) || break
		kill -KILL "${pids[@]}" 2>/dev/null || true
		sleep 0.05
	done

	# 3. Namespaces, links, bridge.
	for ns in $(our_netns); do
		ip netns del "$ns" 2>/dev/null || warn "could not delete netns $ns"
	done
	while read -r name; do
		[[ -n $name ]] || continue
		any=1
		ip link del "$name" 2>/dev/null || true
	done < <(ip -o link show 2>/dev/null |
		awk -F': ' -v p="$PFX" -v b="$BRIDGE" '{ sub(/@.*/, "", $2) }
			index($2, p) == 1 || $2 == b { print $2 }')

	# 4. Mounts under the state dir (none are made in the root namespace, but
	#    be thorough), then the state dir itself: only when it carries our
	#    marker (DISTENV_CLUSTER_DIR might name someone else's directory).
	if [[ -d $D ]]; then
		any=1
		while read -r name; do
			umount -l "$name" 2>/dev/null || true
		done < <(awk -v d="$D" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r)
		if [[ -f $D/$MARKER ]]; then
			rm -rf -- "$D"
		else
			rmdir -- "$D" 2>/dev/null ||
				warn "left $D alone: not a $PROG state dir (no $MARKER)"
		fi
	fi
	return $((any ? 0 : 3))
}

# ---------------------------------------------------------------------------
# exec, node-exec

# login_exec CMD...: exec CMD on the login host against the cluster.
login_exec() {
	export SLURM_CONF=$CONF
	exec_pids >/dev/null # prunes the files of finished commands
	echo "$$ $(start_time $$)" >"$RUN/exec-$$.pid"
	load_shape || true
	if [[ -n $ROOT ]]; then
		# Inside the root, in the login holder's mount namespace (its
		# /etc/hosts is login-hosts too), in the caller's directory when
		# that is a shared path.
		local pid
		pid=$(holder_pid login) || refuse "the login side of the cluster is not running (see $PROG status)"
		in_root_words "$PWD"
		# The host's PATH names host tools (pyenv shims under /root, say)
		# that the shared paths would carry in: use the root's own.
		export PATH=$ROOT_PATH
		exec nsenter --target "$pid" --mount -- "${ROOT_WORDS[@]}" "$@"
	fi
	# The login host resolves the cluster's names too, through a private
	# mount namespace whose /etc/hosts is $D/login-hosts (the real file is
	# never touched). Slurm itself needs no names here (it uses NodeAddr),
	# but users' commands may (ping node1, ssh-less checks, MASTER_ADDR).
	# shellcheck disable=SC2016 # expanded by the inner sh
	exec unshare --mount --propagation private -- \
		/bin/sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' \
		"$D/login-hosts" "$@"
}

# node_exec NODE CMD...: exec CMD inside NODE's namespaces.
node_exec() {
	local node=$1 pid
	shift
	[[ $node == login ]] && refuse "no such running node: $node (NODE: node1..nodeN or ctl)"
	pid=$(holder_pid "$node") || refuse "no such running node: $node (see $PROG status)"
	export SLURM_CONF=$CONF
	load_shape || true
	if [[ -n $ROOT ]]; then
		in_root_words "$PWD"
		export PATH=$ROOT_PATH
		set -- "${ROOT_WORDS[@]}" "$@"
	fi
	exec nsenter --target "$pid" --net --uts --mount -- "$@"
}
