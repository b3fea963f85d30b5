# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# testbed.sh: Debian "VMs" on this machine for the Ansible end-to-end test:
# systemd containers (systemd-nspawn --boot) on a private bridge, each with
# its own address, hostname, sshd and systemd, reached by Ansible over SSH
# exactly like cloud VMs. See docs/ansible.md ("How it is tested").
#
#   . tests/ansible/testbed.sh
#   TB_WORK=$(mktemp -d /var/tmp/dea-XXXXXX)
#   tb_host_up                     # bridge, NAT, tmpfs for nspawn
#   tb_base                        # Debian rootfs (cache tarball if any)
#   tb_node_up head 10.78.0.10     # boot one node, wait for sshd
#   tb_ssh head hostname
#   tb_outside_up                  # a host on the bridge, outside the subnet
#   tb_outside CMD...              # CMD run there (host binaries)
#   tb_down                        # everything above, undone
#
# What differs from real VMs, by necessity (this kernel has no NFS):
#   - one host folder ($TB_WORK/shared) is bind-mounted into every node at
#     $TB_SHARED, standing in for the NFS client mounts (a user-space NFS
#     server, NFS-Ganesha, can export it from the head: the nodes allow
#     open_by_handle_at for it);
#   - the nodes share the host's kernel and clock (no time sync inside).
#
# Settings (environment):
#   TB_RELEASE  Debian suite of the nodes (default bookworm; trixie works)
#   TB_MIRROR   Debian mirror (default http://deb.debian.org/debian)
#   TB_CACHE    folder for the base rootfs tarball, used only if it exists
#               (default /var/cache/distenv-ansible)
#   TB_ID       which test bed, 0-9 (default 0): test beds of different ids
#               run side by side (their own bridge, subnet, machine names
#               and NAT table)
#   TB_BRIDGE   bridge name (default dea<ID>), TB_NET its /24 (default
#               10.78.<ID>)
#   TB_SHARED   the shared path inside the nodes (default /shared)
#
# Every name this creates starts with "dea" (bridge dea0, machines dea-*,
# nft table dea_nat; with TB_ID=N: deaN, deaN-*, deaN_nat); all state lives
# under $TB_WORK, so tb_down can undo exactly what tb_* did, by PID and by
# path. What test beds share (nspawn's runtime tmpfs, IP forwarding) is
# undone by the last one down (/run/dea-testbeds).

TB_RELEASE=${TB_RELEASE:-bookworm}
TB_MIRROR=${TB_MIRROR:-http://deb.debian.org/debian}
TB_CACHE=${TB_CACHE:-/var/cache/distenv-ansible}
TB_ID=${TB_ID:-0}
case $TB_ID in
[0-9]) ;;
*) echo "testbed: TB_ID=$TB_ID: expected a digit 0-9" >&2; return 2 ;;
esac
TB_BRIDGE=${TB_BRIDGE:-dea$TB_ID}
TB_NET=${TB_NET:-10.78.$TB_ID}
# Names of this test bed's machines, cgroups and NAT table.
TB_PFX=dea
[ "$TB_ID" = 0 ] || TB_PFX=dea$TB_ID
TB_SHARED_STATE=/run/dea-testbeds
TB_SHARED=${TB_SHARED:-/shared}
TB_WORK=${TB_WORK:-}

# What a minimal cloud image has, and what Ansible needs on a node.
TB_PACKAGES=systemd,systemd-sysv,dbus,libpam-systemd,python3,python3-apt,openssh-server,iproute2,sudo,ca-certificates,procps
TB_BASE_VERSION=1 # bump when the base recipe below changes (cache key)

tb_log() { printf '# testbed: %s\n' "$*"; }

# tb_need_work: every function keeps its state under $TB_WORK.
tb_need_work() {
	if [ -z "$TB_WORK" ] || [ ! -d "$TB_WORK" ]; then
		echo "testbed: TB_WORK is not a directory" >&2
		return 1
	fi
}

# --- the host side: bridge, NAT to the Debian archive, nspawn's runtime dir ----
tb_host_up() {
	tb_need_work || return 1
	local st=$TB_WORK/host rc=0 tb_lock
	mkdir -p "$st" "$TB_SHARED_STATE"
	# What test beds share, under one lock: nspawn's runtime tmpfs and IP
	# forwarding, set up by the first one up, undone by the last one down.
	exec {tb_lock}>"$TB_SHARED_STATE/.lock"
	flock "$tb_lock"
	touch "$TB_SHARED_STATE/${TB_WORK##*/}"
	touch "$st/registered"
	# nspawn keeps its runtime state under /run/systemd/nspawn and refuses to
	# clean up when /run is not a tmpfs (it is not here).
	if ! mountpoint -q /run/systemd/nspawn 2>/dev/null; then
		mkdir -p /run/systemd/nspawn
		mount -t tmpfs -o mode=0755 dea-nspawn /run/systemd/nspawn &&
			touch "$TB_SHARED_STATE/.mounted-nspawn-tmpfs" || rc=1
	fi
	# The nodes reach the Debian archive through the host: forwarding plus a
	# masquerade for the bridge subnet only, in a table of our own.
	if [ ! -f "$TB_SHARED_STATE/.ip_forward" ]; then
		cat /proc/sys/net/ipv4/ip_forward >"$TB_SHARED_STATE/.ip_forward"
	fi
	echo 1 >/proc/sys/net/ipv4/ip_forward
	flock -u "$tb_lock"
	exec {tb_lock}>&-
	((rc == 0)) || return 1
	if ! ip link show "$TB_BRIDGE" >/dev/null 2>&1; then
		ip link add "$TB_BRIDGE" type bridge || return 1
		touch "$st/created-bridge"
		ip addr add "$TB_NET.1/24" dev "$TB_BRIDGE" || return 1
		ip link set "$TB_BRIDGE" up || return 1
	fi
	if ! nft list table ip "${TB_PFX}_nat" >/dev/null 2>&1; then
		nft -f - <<-EOF || return 1
			table ip ${TB_PFX}_nat {
				chain post {
					type nat hook postrouting priority srcnat; policy accept;
					ip saddr $TB_NET.0/24 oifname != "$TB_BRIDGE" masquerade
				}
			}
		EOF
		touch "$st/created-nat"
	fi
}

tb_host_down() {
	local st=$TB_WORK/host tb_lock
	[ -d "$st" ] || return 0
	if [ -f "$st/created-nat" ]; then
		nft delete table ip "${TB_PFX}_nat" 2>/dev/null
		rm -f "$st/created-nat"
	fi
	if [ -f "$st/created-bridge" ]; then
		ip link del "$TB_BRIDGE" 2>/dev/null
		rm -f "$st/created-bridge"
	fi
	[ -f "$st/registered" ] || return 0
	exec {tb_lock}>"$TB_SHARED_STATE/.lock"
	flock "$tb_lock"
	rm -f "$TB_SHARED_STATE/${TB_WORK##*/}" "$st/registered"
	# The last test bed down: forwarding as it was, nspawn's tmpfs gone.
	if [ -z "$(find "$TB_SHARED_STATE" -mindepth 1 -maxdepth 1 -name '[!.]*' -print -quit)" ]; then
		if [ -f "$TB_SHARED_STATE/.ip_forward" ]; then
			cat "$TB_SHARED_STATE/.ip_forward" >/proc/sys/net/ipv4/ip_forward
			rm -f "$TB_SHARED_STATE/.ip_forward"
		fi
		if [ -f "$TB_SHARED_STATE/.mounted-nspawn-tmpfs" ]; then
			umount /run/systemd/nspawn 2>/dev/null || umount -l /run/systemd/nspawn
			rmdir /run/systemd/nspawn 2>/dev/null
			rm -f "$TB_SHARED_STATE/.mounted-nspawn-tmpfs"
		fi
	fi
	flock -u "$tb_lock"
	exec {tb_lock}>&-
	return 0
}

# --- the base image ---------------------------------------------------------------
# tb_base: $TB_WORK/base, a Debian rootfs like a minimal cloud image. From the
# cache tarball when $TB_CACHE holds one, else built with mmdebstrap (about a
# minute) and then cached if $TB_CACHE exists.
tb_base() {
	tb_need_work || return 1
	local base=$TB_WORK/base arch key tarball
	arch=$(dpkg --print-architecture)
	key="base-$TB_RELEASE-$arch-v$TB_BASE_VERSION-$(printf '%s' "$TB_PACKAGES" | md5sum | cut -c1-8)"
	tarball=$TB_CACHE/$key.tar.zst
	rm -rf "$base"
	mkdir -p "$base"
	if [ -f "$tarball" ] && tar --zstd -xpf "$tarball" -C "$base" 2>/dev/null; then
		tb_log "base $TB_RELEASE from cache $tarball"
		return 0
	fi
	rm -rf "$base"
	tb_log "building base $TB_RELEASE with mmdebstrap ($TB_MIRROR)"
	mmdebstrap --quiet --variant=minbase --include="$TB_PACKAGES" \
		"$TB_RELEASE" "$base" "$TB_MIRROR" >"$TB_WORK/mmdebstrap.log" 2>&1 || {
		tail -20 "$TB_WORK/mmdebstrap.log" | sed 's/^/# /'
		return 1
	}
	# Per node at boot: machine id, hostname, addresses, keys.
	: >"$base/etc/machine-id"
	rm -f "$base/etc/hostname" "$base/var/lib/dbus/machine-id"
	ln -sf ../../../etc/machine-id "$base/var/lib/dbus/machine-id" 2>/dev/null
	# Networking by systemd-networkd (configured per node).
	chroot "$base" systemctl enable systemd-networkd.service >/dev/null 2>&1
	# Nothing a VM would not have: no getty on the read-only console.
	chroot "$base" systemctl mask console-getty.service >/dev/null 2>&1
	if [ -d "$TB_CACHE" ]; then
		tar --zstd -cpf "$tarball.tmp.$$" -C "$base" . &&
			mv "$tarball.tmp.$$" "$tarball" && tb_log "cached as $tarball"
		rm -f "$tarball.tmp.$$"
	fi
	return 0
}

# --- nodes -------------------------------------------------------------------------
# tb_ssh NAME CMD...: run CMD on node NAME as root over SSH.
tb_ssh() {
	local name=$1
	shift
	ssh -F "$TB_WORK/ssh_config" "$name" "$@"
}

# tb_keys: the SSH key Ansible and tb_ssh use, and an ssh_config naming nodes.
tb_keys() {
	tb_need_work || return 1
	[ -f "$TB_WORK/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C dea-testbed -f "$TB_WORK/id_ed25519" || return 1
	[ -f "$TB_WORK/ssh_config" ] || : >"$TB_WORK/ssh_config"
}

# tb_node_up NAME ADDRESS: boot node NAME at ADDRESS/24 on the bridge and wait
# until its sshd answers. The node is a systemd container whose root is an
# overlay of the base (lower) and a per-node folder (upper).
tb_node_up() {
	local name=$1 addr=$2 d root up cg pid i
	tb_need_work || return 1
	tb_keys || return 1
	d=$TB_WORK/nodes/$name
	root=$d/root up=$d/upper
	mkdir -p "$root" "$up" "$d/work" "$TB_WORK/shared"
	mount -t overlay "$TB_PFX-$name" -o "lowerdir=$TB_WORK/base,upperdir=$up,workdir=$d/work" "$root" || return 1
	touch "$d/mounted"

	# Like a cloud image: hostname, the Debian 127.0.1.1 line (the trap the
	# playbooks must fix), a static address, a resolver, root's SSH key.
	echo "$name" >"$root/etc/hostname"
	printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$name" >"$root/etc/hosts"
	mkdir -p "$root/etc/systemd/network"
	cat >"$root/etc/systemd/network/10-dea.network" <<-EOF
		[Match]
		Name=host0
		[Network]
		Address=$addr/24
		Gateway=$TB_NET.1
		LinkLocalAddressing=no
		IPv6AcceptRA=no
	EOF
	rm -f "$root/etc/resolv.conf"
	grep -E '^(nameserver|search|options)' /etc/resolv.conf >"$root/etc/resolv.conf"
	mkdir -p "$root/root/.ssh"
	chmod 0700 "$root/root/.ssh"
	install -m 0600 "$TB_WORK/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
	# nspawn mounts the cgroup v1 controllers read-only; slurmd's cgroup
	# plugins need them writable (each node has its own cgroup, see below).
	cat >"$root/etc/systemd/system/dea-cgroup-rw.service" <<-'EOF'
		[Unit]
		Description=testbed: cgroup v1 controllers writable (as on a VM)
		DefaultDependencies=no
		Before=sysinit.target
		[Service]
		Type=oneshot
		RemainAfterExit=yes
		ExecStart=/bin/sh -c 'for d in /sys/fs/cgroup/*/; do mountpoint -q "$d" && mount -o remount,bind,rw "$d" || true; done'
		[Install]
		WantedBy=sysinit.target
	EOF
	mkdir -p "$root/etc/systemd/system/sysinit.target.wants"
	ln -sf ../dea-cgroup-rw.service "$root/etc/systemd/system/sysinit.target.wants/dea-cgroup-rw.service"

	# A cgroup of its own in every hierarchy, so that two nodes never share
	# one (slurmd on each creates job cgroups under its own root).
	for cg in /sys/fs/cgroup/*/; do
		mountpoint -q "$cg" || continue
		mkdir -p "${cg}$TB_PFX-$name" && echo "${cg}$TB_PFX-$name" >>"$d/cgroups"
	done
	# open_by_handle_at: NFS-Ganesha's VFS backend opens files by handle;
	# nspawn's seccomp filter refuses it (EPERM) unless allowed here (the
	# capability it needs, CAP_DAC_READ_SEARCH, nspawn keeps by default).
	(
		while read -r cg; do echo "$BASHPID" >"$cg/cgroup.procs"; done <"$d/cgroups"
		exec systemd-nspawn --quiet --boot --register=no --keep-unit \
			--directory="$root" --machine="$TB_PFX-$name" --hostname="$name" \
			--network-bridge="$TB_BRIDGE" --resolv-conf=off --timezone=off \
			--console=read-only --link-journal=no \
			--system-call-filter=open_by_handle_at \
			--bind="$TB_WORK/shared:$TB_SHARED"
	) </dev/null >"$d/console.log" 2>&1 &
	pid=$!
	echo "$pid" >"$d/pid"
	cat >>"$TB_WORK/ssh_config" <<-EOF
		Host $name
		  HostName $addr
		  User root
		  IdentityFile $TB_WORK/id_ed25519
		  IdentitiesOnly yes
		  StrictHostKeyChecking no
		  UserKnownHostsFile /dev/null
		  LogLevel ERROR
		  ConnectTimeout 3
	EOF
	for ((i = 0; i < 60; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			tb_log "node $name exited while booting:"
			tail -20 "$d/console.log" | sed 's/^/# /'
			return 1
		fi
		tb_ssh "$name" true 2>/dev/null && return 0
		sleep 1
	done
	tb_log "node $name: no sshd after 60 s"
	tail -20 "$d/console.log" | sed 's/^/# /'
	return 1
}

# tb_node_down NAME: clean poweroff (SIGRTMIN+4 to its systemd), then the
# overlay and cgroups. Escalates to SIGKILL of the launcher after 20 s.
tb_node_down() {
	local name=$1 d pid i cg
	d=$TB_WORK/nodes/$name
	[ -d "$d" ] || return 0
	if [ -f "$d/pid" ]; then
		pid=$(cat "$d/pid")
		if kill -0 "$pid" 2>/dev/null; then
			# The container's PID 1 is nspawn's child.
			local init
			init=$(awk '{print $1}' "/proc/$pid/task/$pid/children" 2>/dev/null)
			[ -n "$init" ] && kill -RTMIN+4 "$init" 2>/dev/null
			for ((i = 0; i < 40; i++)); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.5
			done
			if kill -0 "$pid" 2>/dev/null; then
				kill -TERM "$pid" 2>/dev/null
				sleep 2
				kill -KILL "$pid" 2>/dev/null
			fi
			# A launcher we started is our child: reap it.
			wait "$pid" 2>/dev/null
		fi
		rm -f "$d/pid"
	fi
	if [ -f "$d/mounted" ]; then
		umount "$d/root" 2>/dev/null || umount -l "$d/root"
		rm -f "$d/mounted"
	fi
	if [ -f "$d/cgroups" ]; then
		while read -r cg; do
			[ -d "$cg" ] && find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
		done <"$d/cgroups"
		rm -f "$d/cgroups"
	fi
	rm -rf "$d"
}

# --- a host outside the cluster subnet ---------------------------------------------
# tb_outside_up: a network namespace on the bridge at $TB_OUTSIDE_ADDR, in a
# subnet of its own ($TB_OUTSIDE_NET.0/24, 10.75.<ID>: no other test's,
# bench/preflight-scale has 10.79); the host routes between it and the
# nodes' subnet (the host's address there is added to the bridge). It reaches the nodes' ports, but is not in their subnet.
TB_OUTSIDE_NET=${TB_OUTSIDE_NET:-10.75.$TB_ID}
TB_OUTSIDE_ADDR=$TB_OUTSIDE_NET.2
tb_outside_up() {
	tb_need_work || return 1
	local ns=$TB_PFX-outside
	ip netns add "$ns" || return 1
	echo "$ns" >"$TB_WORK/host/outside"
	ip link add "$ns" type veth peer name "$TB_PFX-outp" netns "$ns" || return 1
	ip link set "$ns" master "$TB_BRIDGE" up &&
		ip addr add "$TB_OUTSIDE_NET.1/24" dev "$TB_BRIDGE" &&
		ip -n "$ns" link set lo up &&
		ip -n "$ns" addr add "$TB_OUTSIDE_ADDR/24" dev "$TB_PFX-outp" &&
		ip -n "$ns" link set "$TB_PFX-outp" up &&
		ip -n "$ns" route add default via "$TB_OUTSIDE_NET.1"
}

# tb_outside CMD...: run CMD (a host program) in the outside namespace.
tb_outside() { ip netns exec "$TB_PFX-outside" "$@"; }

tb_outside_down() {
	local f=$TB_WORK/host/outside ns
	[ -f "$f" ] || return 0
	ns=$(cat "$f")
	# The veth goes with the namespace; the bridge address with the bridge
	# (or here, when the bridge was not ours).
	ip netns del "$ns" 2>/dev/null
	ip addr del "$TB_OUTSIDE_NET.1/24" dev "$TB_BRIDGE" 2>/dev/null
	rm -f "$f"
}

# tb_down: every node, then the host side, then $TB_WORK itself.
tb_down() {
	local n
	if [ -z "$TB_WORK" ] || [ ! -d "$TB_WORK" ]; then return 0; fi
	tb_outside_down
	if [ -d "$TB_WORK/nodes" ]; then
		for n in "$TB_WORK"/nodes/*/; do
			[ -d "$n" ] && tb_node_down "$(basename "$n")"
		done
	fi
	tb_host_down
	# Only remove the work dir when nothing is mounted below it any more.
	if ! grep -q " $TB_WORK/" /proc/mounts; then
		rm -rf "$TB_WORK"
	else
		tb_log "left $TB_WORK: still mounted below it"
	fi
}
