# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# cluster-up.sh: distenv-cluster's daemons and their lifecycle: munged or
# sackd, slurmctld and the slurmds started in the nodes' namespaces, the
# plugin an up loads, up itself (what is running, what to rebuild) and the
# health status reports. Sourced by scripts/distenv-cluster; functions only.

# ---------------------------------------------------------------------------
# the daemons

preflight_up() {
	local t auth_daemon=munged
	[[ $AUTH == slurm ]] && auth_daemon=sackd
	for t in "$auth_daemon" slurmctld slurmd sinfo scontrol srun; do
		if [[ -n $ROOT ]]; then
			[[ -x $ROOT/usr/sbin/$t || -x $ROOT/usr/bin/$t ]] ||
				refuse "$t not found in $ROOT: remove that root ($PROG roots --clean) and run up again"
			continue
		fi
		command -v "$t" >/dev/null ||
			refuse "$t not found: install munge slurmctld slurmd slurm-client (apt-get install munge slurmctld slurmd slurm-client), or run another Slurm with --slurm VERSION"
	done
	command -v chroot >/dev/null || refuse "chroot not found: install coreutils"
	unshare --net --uts --mount true 2>/dev/null ||
		refuse "cannot create network/UTS/mount namespaces here (need CAP_SYS_ADMIN, e.g. a privileged container)"
	[[ -d /sys/class/net ]] || refuse "/sys is not mounted: mount -t sysfs sysfs /sys"
}

# Slurm's clients as the script itself uses them: the root's, when the
# cluster runs one (the host's 22.05 clients cannot talk to a 26.05 ctl).
slurm_cmd() { # CMD...
	if [[ -n $ROOT ]]; then
		in_ns login env SLURM_CONF="$CONF" "$@"
	else
		SLURM_CONF=$CONF "$@"
	fi
}

# The running Slurm's version: the controller's, else the clients'.
slurm_version() {
	local v
	v=$(slurm_cmd scontrol show config 2>/dev/null | awk '$1 == "SLURM_VERSION" { print $3 }') || true
	[[ -n $v ]] || v=$(slurm_cmd scontrol -V 2>/dev/null | awk '{ print $NF }') || true
	echo "${v:-unknown}"
}

sinfo_states() { # prints "node state" lines
	slurm_cmd sinfo -h -N -o '%N %t' 2>/dev/null | sort -u
}

all_idle() { # NODES
	local out
	out=$(sinfo_states) || return 1
	[[ $(grep -c ' idle$' <<<"$out") -eq $1 ]]
}

# shellcheck disable=SC2317 # reached from the EXIT trap (shellcheck cannot tell)
log_tails() {
	local f
	for f in "$LOG"/*.log; do
		[[ -s $f ]] || continue
		printf '==> %s <==\n' "$f"
		tail -n 15 "$f"
	done >&2
}

# up_cleanup: do_up's EXIT trap; undoes a cluster that did not come up.
# shellcheck disable=SC2317 # reached from the EXIT trap (shellcheck cannot tell)
up_cleanup() {
	((UP_OK)) && return 0
	warn "up failed; daemons' logs:"
	log_tails
	warn "undoing the partial cluster"
	do_down >/dev/null 2>&1 || true
}

do_up() { # NODES CPUS PLUGIN ARGS
	local n=$1 cpus=$2 i name names=(ctl) starters=() deadline t0=$EPOCHREALTIME
	for ((i = 1; i <= n; i++)); do names+=("node$i"); done

	UP_OK=0
	trap up_cleanup EXIT
	trap 'exit 1' INT TERM HUP

	write_files "$@"
	# shellcheck disable=SC2153 # INSTALL, the front's (not S_INSTALL)
	if ((${#INSTALL[@]})); then make_pkg_root; fi
	write_shape "$n" "$cpus" "$3" "$4"
	# With a root, munged (or sackd) and the clients run on the login side
	# inside it. auth/slurm runs only from a root (23.11+).
	if [[ -n $ROOT ]]; then names+=(login); fi
	if [[ -z $ROOT ]]; then
		munged_start
	fi

	setup_network "$n"
	for name in "${names[@]}"; do start_holder "$name"; done
	wait_holders "${names[@]}"
	if [[ -n $ROOT && $AUTH == munge ]]; then
		munged_start
	elif [[ $AUTH == slurm ]]; then
		sackd_start
	fi

	in_ns ctl slurmctld -f "$CONF" </dev/null >>"$LOG/slurmctld.log" 2>&1 ||
		die "slurmctld failed to start"
	deadline=$((SECONDS + UP_TIMEOUT))
	until slurm_cmd scontrol ping 2>/dev/null | grep -q 'is UP'; do
		((SECONDS < deadline)) || die "slurmctld not answering after ${UP_TIMEOUT} s"
		sleep 0.02
	done
	for ((i = 1; i <= n; i++)); do
		in_ns "node$i" slurmd -f "$CONF" -N "node$i" \
			</dev/null >>"$LOG/node$i.log" 2>&1 &
		starters+=($!)
	done
	for i in "${starters[@]}"; do
		wait "$i" || die "a slurmd failed to start"
	done

	until all_idle "$n"; do
		if ((SECONDS >= deadline)); then
			warn "nodes not idle after ${UP_TIMEOUT} s:"
			sinfo_states >&2 || true
			die "cluster did not come up"
		fi
		sleep 0.05
	done
	UP_OK=1
	trap - EXIT INT TERM HUP
	say "up: $n nodes x $cpus CPUs idle in $(since "$t0") s; Slurm $(slurm_version)${ROOT:+ (Debian $(release_of "$SLURM_V") root)}; auth/$AUTH; state dir $D"
}

# make_pkg_root: an overlay of the version's root (the cache stays as it
# was), mounted where every namespace made after it sees it, with the
# --install packages installed; from here on the cluster runs from it.
make_pkg_root() {
	local d=$D/pkgroot log=$LOG/install.log
	mkdir -p "$d/upper" "$d/work" "$d/merged"
	mount -t overlay overlay -o "lowerdir=$ROOT,upperdir=$d/upper,workdir=$d/work" "$d/merged" ||
		die "cannot mount an overlay of $ROOT on $d/merged"
	mkdir -p "$d/merged/var/cache/distenv-install"
	cp -- "${INSTALL[@]}" "$d/merged/var/cache/distenv-install/"
	local debs=() deb
	for deb in "${INSTALL[@]}"; do debs+=("/var/cache/distenv-install/${deb##*/}"); done
	if ! unshare --mount --propagation private -- "$SELF" _inroot "$d/merged" / dpkg -i "${debs[@]}" \
		</dev/null >"$log" 2>&1 9<&-; then
		tail -n 15 "$log" >&2
		die "dpkg -i of ${INSTALL[*]##*/} in the Slurm $SLURM_V root failed: see $log"
	fi
	rm -rf -- "$d/merged/var/cache/distenv-install"
	say "installed ${INSTALL[*]##*/} in an overlay of the $(release_of "$SLURM_V") root"
	ROOT=$d/merged
}

munged_start() {
	local run=(munged)
	if [[ -n $ROOT ]]; then run=(in_ns login munged); fi
	"${run[@]}" --socket="$D/munge/munge.socket" --key-file="$D/munge/munge.key" \
		--pid-file="$RUN/munged.pid" --log-file="$LOG/munged.log" \
		--seed-file="$D/munge/munged.seed" </dev/null >>"$LOG/munged.log" 2>&1 9<&- ||
		die "munged failed to start"
}

# sackd on the login side (auth/slurm): the login host runs no slurmd, and
# its clients (srun, sbatch, scontrol) get their credentials from sackd's
# /run/slurm/sack.socket. sackd forks into the background and writes no pid
# file: it is found afterwards as the sackd in the login holder's mount
# namespace, and its pid recorded.
sackd_start() {
	local pid deadline=$((SECONDS + 10)) s
	pid=$(holder_pid login) || die "login: namespace holder is not running"
	nsenter --target "$pid" --mount -- /usr/sbin/chroot "$ROOT" sackd -f "$CONF" \
		</dev/null >>"$LOG/sackd.log" 2>&1 9<&- || die "sackd failed to start (see $LOG/sackd.log)"
	until s=$(sackd_find) && nsenter --target "$pid" --mount -- test -S "$ROOT/run/slurm/sack.socket"; do
		((SECONDS < deadline)) || die "sackd did not start on the login side (see $LOG/sackd.log)"
		sleep 0.02
	done
	echo "$s" >"$RUN/sackd.pid"
}

# sackd_find: the pid of the sackd in the login holder's mount namespace.
sackd_find() {
	local h ns f p
	h=$(holder_pid login) || return 1
	ns=$(readlink "/proc/$h/ns/mnt") || return 1
	for f in /proc/[0-9]*/exe; do
		[[ $(readlink "$f" 2>/dev/null) == */sackd ]] || continue
		p=${f#/proc/}
		p=${p%/exe}
		[[ $(readlink "/proc/$p/ns/mnt" 2>/dev/null) == "$ns" ]] && { echo "$p"; return 0; }
	done
	return 1
}

# Is the recorded cluster fully running (every daemon alive)? 0 yes, 1 no
# trace of it, 2 partly there.
daemons_state() {
	local i
	if ! load_shape; then
		[[ -d $D ]] || [[ -n $(our_netns) ]] && return 2
		return 1
	fi
	if [[ $AUTH == slurm ]]; then
		pid_of sackd sackd >/dev/null || return 2
	else
		pid_of munged munged >/dev/null || return 2
	fi
	pid_of slurmctld slurmctld >/dev/null || return 2
	holder_pid ctl >/dev/null || return 2
	if [[ -n $ROOT ]]; then holder_pid login >/dev/null || return 2; fi
	for ((i = 1; i <= S_NODES; i++)); do
		holder_pid "node$i" >/dev/null || return 2
		pid_of "slurmd-node$i" slurmd >/dev/null || return 2
	done
	return 0
}

resolve_plugin() { # sets PLUGIN; args: given(0/1) path nopl
	local given=$1 path=$2 nopl=$3
	PLUGIN=''
	if ((nopl)); then
		return
	fi
	if ((${#INSTALL[@]})); then
		# The plugin where the packages install it, as the root sees it.
		local deb
		for deb in "${INSTALL[@]}"; do
			path=$(dpkg-deb -c "$deb" | awk '$6 ~ /\/distenv\.so$/ { sub(/^\./, "", $6); print $6; exit }')
			if [[ -n $path ]]; then PLUGIN=$path; return; fi
		done
		say "no plugin among the packages (${INSTALL[*]##*/}): coming up without one"
		return
	fi
	if ((given)); then
		[[ -f $path ]] || refuse "plugin not found: $path (build it with make, or pass --no-plugin)"
	elif [[ -n $ROOT ]]; then
		# Another Slurm loads only a plugin built against its own headers:
		# the version's build, not $DISTENV_PLUGIN (a host build, usually).
		path=$(build_dir "$SLURM_V")/spank/.libs/distenv.so
		[[ -f $path ]] || refuse "no plugin built for Slurm $SLURM_V at $path: run $PROG build --slurm $SLURM_V"
	elif [[ -n ${DISTENV_PLUGIN:-} ]]; then
		path=$DISTENV_PLUGIN
		[[ -f $path ]] || refuse "DISTENV_PLUGIN not found: $path (build it, or unset DISTENV_PLUGIN)"
	elif [[ -f $DEFAULT_PLUGIN ]]; then
		path=$DEFAULT_PLUGIN
	else
		say "no plugin built at $DEFAULT_PLUGIN: coming up without a plugin"
		return
	fi
	PLUGIN=$(readlink -f -- "$path")
	if [[ -n $ROOT ]] && ! is_shared "$PLUGIN"; then
		refuse "plugin $PLUGIN is not visible inside the Slurm $SLURM_V root: put it under one of $(shared_paths | tr '\n' ' ')"
	fi
}

all_idle_or_busy() {
	local out
	out=$(sinfo_states) || return 1
	[[ -n $out ]] || return 1
	! grep -qvE ' (idle|alloc|mix|comp|plnd)$' <<<"$out"
}

# ---------------------------------------------------------------------------
# up, status

# up_run NODES CPUS GIVEN PATH NOPL ARGS SLURM AUTH: up with checked options
# (cmd_up): the version's root and build first, then nothing, the plugin
# line alone, or a rebuild, as what runs differs from what is asked.
up_run() {
	local nodes=$1 cpus=$2 given=$3 path=$4 nopl=$5 args=$6 slurm=$7 auth=$8 rc=0
	preflight
	set_version "$slurm"
	AUTH=$auth
	if [[ -n $ROOT ]]; then
		ensure_root "$slurm"
		# The version's own build of the checkout, unless a plugin is named
		# or none is wanted; make redoes only what changed.
		if ((!given && !nopl)) && ((${#INSTALL[@]} == 0)) && build_stale "$slurm"; then
			build_version "$slurm"
		fi
	fi
	preflight_up
	resolve_plugin "$given" "$path" "$nopl"
	if [[ -d $D && ! -f $D/$MARKER ]] && [[ -n $(ls -A "$D") ]]; then
		refuse "$D exists and is not a $PROG state dir: choose another DISTENV_CLUSTER_DIR"
	fi
	take_lock

	daemons_state || rc=$?
	if ((rc == 0)) && [[ $S_SLURM != "$slurm" || $S_AUTH != "$auth" ]]; then
		if [[ $S_AUTH == "$auth" ]]; then
			say "running Slurm $S_SLURM: rebuilding with Slurm $slurm"
		else
			say "running Slurm $S_SLURM on auth/$S_AUTH: rebuilding with Slurm $slurm on auth/$auth"
		fi
		set_version "$S_SLURM"
		do_down >/dev/null || true
		rc=1
	fi
	set_version "$slurm"
	AUTH=$auth
	if ((rc == 0)); then
		# shellcheck disable=SC2153 # TOPO, RESV, HEALTH: the front's (what up asks for)
		if ((S_NODES == nodes && S_CPUS == cpus)) && [[ $S_TOPO == "$TOPO" && $S_RESV == "$RESV" && $S_HEALTH == "$HEALTH" && $S_INSTALL == "${INSTALL[*]}" ]] && all_idle_or_busy; then
			if [[ $S_PLUGIN != "$PLUGIN" || $S_ARGS != "$args" ]]; then
				write_plugstack "$PLUGIN" "$args"
				write_shape "$nodes" "$cpus" "$PLUGIN" "$args"
				say "already up ($nodes nodes x $cpus CPUs); plugstack.conf now: $(plugstack_line)"
			else
				say "already up ($nodes nodes x $cpus CPUs); state dir $D"
			fi
			return 0
		fi
		if [[ $S_INSTALL != "${INSTALL[*]}" ]]; then
			say "running with other packages installed: rebuilding"
		elif [[ $S_TOPO != "$TOPO" ]]; then
			say "running with topology $S_TOPO: rebuilding with topology $TOPO"
		elif [[ $S_RESV != "$RESV" ]]; then
			say "running with reserved ports ${S_RESV:-none}: rebuilding with ${RESV:-none}"
		elif [[ $S_HEALTH != "$HEALTH" ]]; then
			say "running with health check ${S_HEALTH:-none}: rebuilding with ${HEALTH:-none}"
		elif ((S_NODES == nodes && S_CPUS == cpus)); then
			say "running but not healthy ($(sinfo_states | tr '\n' ' ')): rebuilding"
		else
			say "running with $S_NODES nodes x $S_CPUS CPUs: rebuilding as $nodes x $cpus"
		fi
	elif ((rc == 2)); then
		if [[ -f $SHAPE ]]; then
			say "degraded (a daemon is not running): rebuilding"
		else
			say "leftovers of an earlier cluster found: cleaning up"
		fi
	fi
	do_down >/dev/null || true
	do_up "$nodes" "$cpus" "$PLUGIN" "$args"
}

# status_report: cmd_status's lines and exit status.
status_report() {
	local rc=0 out i st healthy=1
	daemons_state || rc=$?
	if ((rc == 1)); then
		say "down (state dir $D absent)"
		return 1
	fi
	if ((rc == 2)) && ! load_shape; then
		say "degraded: leftovers without a cluster (run: $PROG down)"
		return 2
	fi
	echo "state dir: $D"
	local topo=''
	[[ $S_TOPO == none ]] || topo=", topology $S_TOPO (SwitchAsNodeRank)"
	echo "shape:     $S_NODES nodes x $S_CPUS CPUs$topo"
	[[ -z $S_RESV ]] || echo "ports:     MpiParams=ports=$S_RESV (reserved per step: SLURM_STEP_RESV_PORTS)"
	[[ -z $S_HEALTH ]] || echo "health:    HealthCheckProgram=${S_HEALTH#* } every ${S_HEALTH%% *} s"
	[[ -z $S_INSTALL ]] || echo "packages:  ${S_INSTALL} (installed in $S_ROOT)"
	if [[ -n $ROOT ]]; then
		echo "slurm:     $(slurm_version) (Debian $(release_of "$S_SLURM") root $ROOT)"
	else
		echo "slurm:     $(slurm_version) (the host's)"
	fi
	if [[ $S_AUTH == slurm ]]; then
		echo "auth:      auth/slurm, cred/slurm (key $D/slurm.key; no munged; sackd on login $(pid_of sackd sackd >/dev/null && echo running || echo STOPPED))"
	else
		echo "auth:      auth/munge, cred/munge (munged $(pid_of munged munged >/dev/null && echo running || echo STOPPED), socket $D/munge/munge.socket)"
	fi
	echo "plugstack: $(plugstack_line)"
	echo "login:     $LOGIN_ADDR ($BRIDGE)"
	echo "ctl:       $CTL_ADDR slurmctld $(pid_of slurmctld slurmctld >/dev/null && echo running || echo STOPPED)"
	out=$(sinfo_states || true)
	for ((i = 1; i <= S_NODES; i++)); do
		st=$(awk -v n="node$i" '$1 == n { print $2 }' <<<"$out")
		pid_of "slurmd-node$i" slurmd >/dev/null || st="${st:-?} (slurmd STOPPED)"
		printf 'node%-5s  %-12s %s\n' "$i" "$(node_addr "$i")" "${st:-unknown}"
		[[ $st =~ ^(idle|alloc|mix|comp|plnd)$ ]] || healthy=0
	done
	if ((rc == 0 && healthy)); then
		say "up"
		return 0
	fi
	say "degraded"
	return 2
}
