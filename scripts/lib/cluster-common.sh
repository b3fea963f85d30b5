# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# cluster-common.sh: distenv-cluster's messages, its state dir and the
# shape file of the running cluster, the checks of --slurm and --auth, the
# preflight every command makes and the up/down lock. Sourced by
# scripts/distenv-cluster; functions only (its globals are set there).

say()  { printf '%s: %s\n' "$PROG" "$*"; }
warn() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die()  { warn "$*"; exit 1; }
# Exit 2: the environment or the command line cannot work; one line on what
# is missing and how to fix it.
refuse() { warn "$*"; exit 2; }

# ---------------------------------------------------------------------------
# state dir and shape

# state_dir: where the running cluster's files are.
state_dir() {
	if [[ -n ${DISTENV_CLUSTER_DIR:-} ]]; then
		printf '%s\n' "$DISTENV_CLUSTER_DIR"
		return
	fi
	mkdir -p /run 2>/dev/null || true
	if [[ -d /run && -w /run ]]; then
		echo /run/distenv-cluster
	else
		echo /tmp/distenv-cluster
	fi
}

# node_addr I: node<I>'s address.
node_addr() { echo "$NET.$((NODE_BASE + $1 - 1))"; }

# load_shape: the running cluster's shape into S_NODES S_CPUS S_PLUGIN
# S_ARGS S_SLURM S_AUTH S_TOPO S_ROOT S_INSTALL S_RESV S_HEALTH, and its version and auth
# into SLURM_V, ROOT, AUTH (from $SHAPE; a shape written before
# --slurm/--auth existed is the host's Slurm on MUNGE). 1: no cluster.
load_shape() {
	[[ -f $SHAPE ]] || return 1
	local k v
	S_SLURM=host S_AUTH=munge S_TOPO=none S_ROOT='' S_INSTALL='' S_RESV='' S_HEALTH=''
	# shellcheck disable=SC2034 # the S_* are read by the commands
	while IFS='=' read -r k v; do
		case $k in
		nodes) S_NODES=$v ;;
		cpus) S_CPUS=$v ;;
		plugin) S_PLUGIN=$v ;;
		args) S_ARGS=$v ;;
		slurm) S_SLURM=$v ;;
		auth) S_AUTH=$v ;;
		topology) S_TOPO=$v ;;
		root) S_ROOT=$v ;;
		install) S_INSTALL=$v ;;
		resv) S_RESV=$v ;;
		health) S_HEALTH=$v ;;
		esac
	done <"$SHAPE"
	release_of "$S_SLURM" >/dev/null || S_SLURM=host
	[[ $S_AUTH == slurm ]] || S_AUTH=munge
	set_version "$S_SLURM"
	AUTH=$S_AUTH
	# A cluster with installed packages runs from its overlay of the root.
	if [[ -n $S_INSTALL && -n $ROOT && $S_ROOT == "$PKG_ROOT" ]]; then ROOT=$S_ROOT; fi
}

# write_shape NODES CPUS PLUGIN ARGS: the shape of the cluster this run
# makes (SLURM_V, AUTH, TOPO, ROOT, INSTALL, RESV, HEALTH as set).
write_shape() {
	# shellcheck disable=SC2153 # INSTALL, the front's (not S_INSTALL)
	printf 'nodes=%s\ncpus=%s\nplugin=%s\nargs=%s\nslurm=%s\nauth=%s\ntopology=%s\nroot=%s\ninstall=%s\nresv=%s\nhealth=%s\n' "$1" "$2" "$3" "$4" \
		"$SLURM_V" "$AUTH" "$TOPO" "$ROOT" "${INSTALL[*]}" "$RESV" "$HEALTH" >"$SHAPE.tmp"
	mv -f "$SHAPE.tmp" "$SHAPE"
}

# ---------------------------------------------------------------------------
# the Slurm version and auth of a run

# set_version VERSION: the Slurm of the cluster this run handles (SLURM_V):
# host, or one with a root (ROOT).
set_version() {
	SLURM_V=$1 ROOT=''
	if [[ $1 != host ]]; then ROOT=$(root_of "$1"); fi
}

# check_auth AUTH VERSION: a known auth that this Slurm has.
check_auth() {
	case $1 in
	munge) ;;
	slurm)
		release_has_auth_slurm "$2" ||
			refuse "--auth slurm needs Slurm $AUTH_SLURM_SINCE or later (auth/slurm, sackd): run it with $(or_list "$(slurm_versions_with release_has_auth_slurm)" "--slurm "), not --slurm $2"
		;;
	*) refuse "--auth: unknown authentication '$1' (expected munge or slurm)" ;;
	esac
}

# check_version VERSION: host or a version of releases.sh's table.
check_version() {
	[[ $1 == host ]] || release_of "$1" >/dev/null ||
		refuse "--slurm: unknown Slurm version '$1' (expected $VERSIONS)"
}

# ---------------------------------------------------------------------------
# preflight, lock, small helpers

preflight() {
	local t
	if [[ $(id -u) -ne 0 ]]; then
		refuse "must run as root (it creates namespaces and starts daemons): try sudo $0"
	fi
	for t in unshare nsenter setsid mount flock; do
		command -v "$t" >/dev/null ||
			refuse "$t not found: install util-linux (apt-get install util-linux)"
	done
	command -v ip >/dev/null ||
		refuse "ip not found: install iproute2 (apt-get install iproute2)"
}

# One `up`/`down`/`plugstack` at a time: lock the state dir's parent (a
# directory: nothing is left behind). Daemons must not inherit fd 9 (9<&-),
# or they would hold the lock forever.
take_lock() {
	local parent
	parent=$(dirname "$D")
	mkdir -p "$parent"
	exec 9<"$parent"
	flock -w 120 9 || die "another $PROG up/down is running (lock on $parent)"
}

alive() { kill -0 "$1" 2>/dev/null; }

# Seconds since an $EPOCHREALTIME value, two decimals.
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }
