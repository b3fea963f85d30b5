# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# cluster-roots.sh: the cache of distenv-cluster (CACHE): one Debian root
# file system per Slurm version, made once with mmdebstrap, how a root is
# entered (its mounts, chroot), and distenv built inside it against that
# version's headers. Sourced by scripts/distenv-cluster; functions and the
# roots' package lists only.

# ---------------------------------------------------------------------------
# the roots

# What the daemons, the clients, distenv's own build and the tests need
# inside a root (mount: trixie's util-linux no longer has it; tests run
# `unshare --mount` + `mount` in tasks; scripts/build-deb builds the
# packages there with debhelper and lintian). Changing this list makes `up`
# rebuild the roots.
ROOT_PKGS=slurmctld,slurmd,slurm-client,munge,libslurm-dev,libmunge-dev,libsodium-dev,gcc,make,autoconf,automake,libtool,pkg-config,python3,python3-torch,iproute2,procps,util-linux,nftables,hostname,gawk,mount,build-essential,debhelper,dpkg-dev,fakeroot,lintian

# root_pkgs VERSION [ARCH]: ROOT_PKGS, plus sackd where Debian ships it
# (release_has_sackd), the daemon that signs the login host's credentials
# under auth/slurm; a root without it keeps the list ROOT_PKGS, so it is
# not remade for it. BUILD_ROOT_PKGS for a foreign ARCH.
root_pkgs() {
	if [[ -n ${2-} ]]; then
		echo "$BUILD_ROOT_PKGS"
		return
	fi
	if release_has_sackd "$1"; then
		echo "$ROOT_PKGS,sackd"
	else
		echo "$ROOT_PKGS"
	fi
}

# Roots of another architecture (`roots --make V --arch ARCH`, for
# scripts/build-deb --arch) only build packages, under qemu-user: no
# cluster runs there, so only what dpkg-buildpackage and lintian need.
BUILD_ROOT_PKGS=build-essential,debhelper,dpkg-dev,fakeroot,libslurm-dev,libmunge-dev,libsodium-dev,pkgconf,lintian

# foreign_arch ARCH: ARCH when it is not this machine's own, else nothing
# (the cluster's root serves this machine's architecture).
foreign_arch() {
	[[ -n ${1-} && $1 != "$(dpkg --print-architecture)" ]] && echo "$1"
	return 0
}

# root_of VERSION [ARCH]: RELEASE, or RELEASE-ARCH for a foreign ARCH.
root_of() { echo "$ROOTS/$(release_of "$1")${2:+-$2}"; }

# The stamp a finished root carries: its package list, then what it ships.
root_ready() { # VERSION [ARCH]
	local r
	r=$(root_of "$1" "${2-}")
	[[ -f $r/.distenv-root ]] && grep -qxF "pkgs=$(root_pkgs "$1" "${2-}")" "$r/.distenv-root"
}

# Mounts at or below PATH in this mount namespace: while there are any (an
# interrupted build's /proc or /dev, say), PATH must not be removed.
mounts_below() {
	awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo
}

# Processes whose root directory is in ROOT (a cluster's, a build's).
root_users() {
	local f p
	for f in /proc/[0-9]*/root; do
		p=$(readlink "$f" 2>/dev/null) || continue
		[[ $p == "$1" || $p == "$1"/* ]] && { p=${f#/proc/}; echo "${p%/root}"; }
	done
	return 0
}

# ensure_root VERSION: build the Debian root once, into a temporary dir that
# is renamed into place only when complete (an interrupted build leaves no
# half root, only a .tmp dir that the next build removes).
ensure_root() {
	local v=$1 arch=${2-} rel r tmp log opts=() t0=$EPOCHREALTIME d
	rel=$(release_of "$v")${2:+-$2}
	r=$(root_of "$v" "$arch")
	root_ready "$v" "$arch" && return 0
	[[ -z $(root_users "$r") ]] ||
		refuse "the Debian $rel root in $r is out of date but in use (pids $(root_users "$r" | tr '\n' ' ')): run $PROG down first"
	command -v mmdebstrap >/dev/null ||
		refuse "mmdebstrap not found: needed to make the Debian $rel root for Slurm $v (apt-get install mmdebstrap)"
	if [[ -n $arch ]]; then
		command -v arch-test >/dev/null ||
			refuse "arch-test not found: an $arch root needs qemu-user (apt-get install qemu-user-static binfmt-support arch-test, or scripts/setup)"
		arch-test "$arch" >/dev/null 2>&1 ||
			refuse "this machine cannot run $arch programs (arch-test $arch fails): install qemu-user-static and binfmt-support and enable it (scripts/setup does: mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc; update-binfmts --enable qemu-aarch64)"
		opts+=(--arch="$arch")
	fi
	mkdir -p "$ROOTS"
	# One builder per root (a second `up` waits, then finds the root made);
	# roots of other releases are made side by side. The cache's own lock,
	# shared, keeps roots --clean away meanwhile.
	exec 8>"$ROOTS/.lock" 6>"$ROOTS/.$rel.lock"
	flock -s -w 1800 8 || die "roots --clean holds $ROOTS/.lock"
	flock -w 1800 6 || die "another $PROG is making the Debian $rel root (lock $ROOTS/.$rel.lock)"
	if root_ready "$v" "$arch"; then exec 6>&- 8>&-; return 0; fi
	# Leftovers of interrupted builds; an out-of-date root stays usable
	# until its successor is complete.
	for d in "$ROOTS/.$rel.tmp."* "$ROOTS/.$rel.old."*; do
		[[ -e $d ]] || continue
		[[ -z $(mounts_below "$d") ]] ||
			die "$d has mounts on it (an interrupted build?): unmount them first"
		rm -rf --one-file-system -- "$d"
	done
	tmp=$ROOTS/.$rel.tmp.$$
	log=$ROOTS/$rel.log
	# sid's Release file is often past its Valid-Until date on a mirror.
	[[ $rel == sid* ]] && opts+=(--aptopt='Acquire::Check-Valid-Until "false"')
	say "making the Debian $rel root for Slurm $v in $r (once; a few minutes${arch:+, under qemu-user}; log $log)"
	# In a private mount namespace: mmdebstrap's own /proc, /sys, /dev mounts
	# in the new root vanish with it, even when it is killed.
	if ! unshare --mount --propagation private -- \
		mmdebstrap --variant=apt --include="$(root_pkgs "$v" "$arch")" "${opts[@]}" \
		"$(release_of "$v")" "$tmp" "$MIRROR" </dev/null >"$log" 2>&1 9<&- 8<&- 6<&-; then
		rm -rf --one-file-system -- "$tmp"
		if grep -qiE 'Could not resolve|Temporary failure|Failed to fetch|Connection (refused|timed out)|Network is unreachable|Unable to connect' "$log"; then
			refuse "cannot reach $MIRROR to make the Debian $rel root for Slurm $v (no network?): see $log"
		fi
		tail -n 20 "$log" >&2
		die "mmdebstrap failed to make the Debian $rel root for Slurm $v: see $log"
	fi
	# Files the namespaces bind over must exist in the root.
	[[ -f $tmp/etc/hosts ]] || echo "127.0.0.1 localhost" >"$tmp/etc/hosts"
	[[ -f $tmp/etc/nsswitch.conf ]] ||
		printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files\n' >"$tmp/etc/nsswitch.conf"
	{
		echo "pkgs=$(root_pkgs "$v" "$arch")"
		echo "release=$rel"
		# shellcheck disable=SC2016 # dpkg-query's own format
		echo "slurm=$(chroot "$tmp" dpkg-query -W -f '${Version}' libslurm-dev)"
		echo "built=$(date -u +%FT%TZ) in $(since "$t0") s"
	} >"$tmp/.distenv-root"
	if [[ -e $r ]]; then
		mv -T -- "$r" "$ROOTS/.$rel.old.$$"
	fi
	mv -T -- "$tmp" "$r"
	rm -rf --one-file-system -- "$ROOTS/.$rel.old.$$"
	exec 6>&- 8>&-
	say "Debian $rel root ready in $(since "$t0") s ($(du -sh --one-file-system "$r" | cut -f1))"
}

# ---------------------------------------------------------------------------
# inside a root: its mounts, chroot

# Paths every node and the login side see at the same place inside a root,
# as NFS would give them on a real cluster: users' homes and job files, the
# state dir (munge socket, slurm.conf), the checkout and the builds. A path
# below an earlier one is covered by it.
shared_paths() {
	local p q seen=()
	for p in /root /home /tmp /work "$D" "$SRC_TREE" "$BUILDS" "$SRCS"; do
		[[ -d $p ]] || continue
		for q in "${seen[@]}"; do
			[[ $p == "$q" || $p == "$q"/* ]] && continue 2
		done
		seen+=("$p")
		echo "$p"
	done
}

# is_shared PATH: is PATH visible at the same place inside a root?
is_shared() {
	local p
	while read -r p; do
		[[ $1 == "$p" || $1 == "$p"/* ]] && return 0
	done < <(shared_paths)
	return 1
}

# root_mounts ROOT [HOSTS]: in a private mount namespace (the caller's own:
# a holder's, a build's), make ROOT usable and give it the shared paths,
# the host's users (uids match on every node, as with LDAP) and HOSTS as
# /etc/hosts. Nothing here is visible outside that namespace.
root_mounts() {
	local r=$1 p
	# The root a mount point of its own: inside the chroot "/" is then a
	# mount, as on a real node, so a task's `unshare --mount` can change
	# its propagation (EINVAL on a plain directory).
	mount --bind "$r" "$r"
	mount -t proc proc "$r/proc"
	mount --rbind /sys "$r/sys"
	mount --rbind /dev "$r/dev"
	# Every host its own /run, as on real hosts: auth/slurm's daemons put
	# their sack.socket there at fixed paths (/run/slurm, /run/slurmctld),
	# and each host's clients and slurmstepd ask the one of their host.
	# Before the shared paths: the state dir may be below /run.
	mount -t tmpfs -o mode=0755,size=16m tmpfs "$r/run"
	while read -r p; do
		mkdir -p "$r$p"
		mount --rbind "$p" "$r$p"
	done < <(shared_paths)
	mount --bind /etc/passwd "$r/etc/passwd"
	mount --bind /etc/group "$r/etc/group"
	if [[ -n ${2-} ]]; then
		mount --bind "$2" "$r/etc/hosts"
		mount --bind "$D/nsswitch-root.conf" "$r/etc/nsswitch.conf"
	fi
}

# `_inroot ROOT DIR CMD...`, run in a private mount namespace: CMD inside
# ROOT, in DIR. Used to build distenv inside a root, and to install
# packages into an overlay of one (up --install).
inroot_main() {
	local root=$1 dir=$2
	shift 2
	root_mounts "$root"
	# shellcheck disable=SC2016 # expanded by the inner sh
	exec chroot "$root" /bin/sh -c 'cd "$0" && exec "$@"' "$dir" "$@"
}

# in_root_words DIR: the words that run a command inside $ROOT in DIR (or /
# when DIR is not shared), from a namespace whose mounts root_mounts made.
in_root_words() {
	local dir=$1
	is_shared "$dir" || dir=/
	# shellcheck disable=SC2016,SC2034 # expanded by the inner sh; read by the caller
	ROOT_WORDS=(/usr/sbin/chroot "$ROOT" /bin/sh -c 'cd "$0" 2>/dev/null || cd /; exec "$@"' "$dir")
}

# ---------------------------------------------------------------------------
# distenv built against a version's own headers, out of the checkout's tree

build_dir() { echo "$BUILDS/$1"; }

# The checkout's files (tracked and untracked, not ignored), NUL-separated.
source_files() {
	if git -C "$SRC_TREE" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$SRC_TREE" ls-files -z -co --exclude-standard
	else
		# Not a git checkout (a tarball): every file but an in-tree build's.
		(cd "$SRC_TREE" && find . -type f ! -path './.git/*' ! -path '*/.libs/*' \
			! -path '*/.deps/*' ! -path './autom4te.cache/*' ! -path './tests/logs/*' \
			! -name '*.o' ! -name '*.lo' ! -name '*.la' ! -name config.status \
			! -name config.log ! -name config.h ! -name libtool ! -name stamp-h1 \
			! -name Makefile ! -name Makefile.in ! -name configure -printf '%P\0')
	fi
}

# build_stale VERSION: no finished build, or a source or the root newer
# than it.
build_stale() {
	local stamp f
	stamp=$(build_dir "$1")/.distenv-built
	[[ -f $stamp ]] || return 0
	[[ $(root_of "$1")/.distenv-root -nt $stamp ]] && return 0
	while IFS= read -r -d '' f; do
		[[ $SRC_TREE/$f -nt $stamp ]] && return 0
	done < <(source_files)
	return 1
}

# build_version VERSION: copy the checkout's sources to $SRCS/V (the
# checkout may be configured in-tree, which a VPATH build refuses; its own
# build is never touched), then configure and make in $BUILDS/V inside the
# version's root, against that root's Slurm headers. Copies keep mtimes,
# so make redoes only what changed.
build_version() {
	local v=$1 src bld log t0
	ensure_root "$v"
	t0=$EPOCHREALTIME
	src=$SRCS/$v bld=$(build_dir "$v") log=$BUILDS/$v.log
	mkdir -p "$BUILDS"
	# One build per version; versions build side by side (the cache's lock,
	# shared, keeps roots --clean away).
	exec 7>"$BUILDS/.lock" 6>"$BUILDS/.$v.lock"
	flock -s -w 1800 7 || die "roots --clean holds $BUILDS/.lock"
	flock -w 1800 6 || die "another $PROG is building for Slurm $v (lock $BUILDS/.$v.lock)"
	# Configured against an older root (a remade one may ship a newer
	# Slurm micro, autotools): start afresh.
	if [[ -f $bld/Makefile && $(root_of "$v")/.distenv-root -nt $bld/Makefile ]]; then
		rm -rf --one-file-system -- "$bld" "$src"
	fi
	mkdir -p "$src" "$bld"
	say "building distenv for Slurm $v in $bld (log $log)"
	source_files | tar -C "$SRC_TREE" --null -T - -cf - | tar -C "$src" -xf - ||
		die "could not copy the sources from $SRC_TREE to $src"
	# shellcheck disable=SC2016 # expanded by the inner sh
	if ! unshare --mount --propagation private -- "$SELF" _inroot "$(root_of "$v")" "$bld" \
		/bin/sh -c 'set -e
			if [ ! -x "$0/configure" ]; then (cd "$0" && autoreconf -fi); fi
			if [ ! -f Makefile ]; then "$0/configure"; fi
			make -j2' "$src" </dev/null >"$log" 2>&1 6<&- 7<&- 8<&- 9<&-; then
		tail -n 30 "$log" >&2
		die "building distenv for Slurm $v failed: see $log"
	fi
	touch "$bld/.distenv-built"
	exec 6>&- 7>&-
	say "built for Slurm $(sed -n 's/^#define DISTENV_SLURM_VERSION "\(.*\)"/\1/p' "$bld/config.h") in $(since "$t0") s: $bld"
}

# ---------------------------------------------------------------------------
# roots --make / --clean / list

# roots_make VERSION [ARCH]: make the root once; stdout is its path alone
# (build-deb reads it), making it is told on stderr.
roots_make() {
	ensure_root "$1" "$2" >&2
	root_of "$1" "$2"
	return 0
}

# roots_clean: remove the cache (roots, builds) when nothing runs from it
# and nothing is being made in it.
roots_clean() {
	[[ -d $CACHE ]] || { say "no cache at $CACHE"; return 0; }
	# Only a cluster from this cache's roots (another cache's is not ours
	# to stop).
	if load_shape && [[ $S_SLURM != host && $S_ROOT == "$ROOTS"/* ]]; then
		refuse "a Slurm $S_SLURM cluster runs from $S_ROOT: run $PROG down before roots --clean"
	fi
	[[ -z $(root_users "$CACHE") ]] ||
		refuse "processes run inside $CACHE (pids $(root_users "$CACHE" | tr '\n' ' ')): stop them first"
	[[ -z $(mounts_below "$CACHE") ]] ||
		die "$CACHE has mounts on it: unmount them first"
	# Not while a root or a build is being made.
	mkdir -p "$ROOTS" "$BUILDS"
	exec 8>"$ROOTS/.lock" 7>"$BUILDS/.lock"
	if ! flock -n 8 || ! flock -n 7; then
		refuse "a root or a build is being made in $CACHE: try again when it is done"
	fi
	rm -rf --one-file-system -- "$CACHE"
	say "removed $CACHE"
	return 0
}

# roots_list: one line per cached root.
roots_list() {
	local d any=0
	for d in "$ROOTS"/*/; do
		[[ -f $d/.distenv-root ]] || continue
		any=1
		printf '%-14s slurm %-22s %s  %s\n' "$(sed -n 's/^release=//p' "$d/.distenv-root")" \
			"$(sed -n 's/^slurm=//p' "$d/.distenv-root")" "${d%/}" \
			"$(sed -n 's/^built=//p' "$d/.distenv-root")"
	done
	((any)) || say "no roots cached in $ROOTS"
}
