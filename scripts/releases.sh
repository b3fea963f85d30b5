# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# releases.sh: the Slurm versions distenv's tools know, the one place for
# what depends on the version: which Debian release's archive ships which
# Slurm (the table distenv-cluster, build-deb and the tests share), and
# which Slurm has which feature. Sourced; the table, then functions only.
# Lookups print nothing and return 1 for an unknown value; the feature
# tests return 1 for anything that is not a VERSION (host, say).

# The table: Slurm VERSION:the Debian RELEASE that ships it, oldest first.
SLURM_RELEASES="22.05:bookworm 24.11:trixie 26.05:sid"

# release_of VERSION: the Debian release that ships Slurm VERSION.
release_of() {
	local p
	for p in $SLURM_RELEASES; do
		[[ ${p%%:*} == "$1" ]] && { echo "${p#*:}"; return 0; }
	done
	return 1
}

# slurm_of RELEASE: the Slurm that Debian RELEASE ships.
slurm_of() {
	local p
	for p in $SLURM_RELEASES; do
		[[ ${p#*:} == "$1" ]] && { echo "${p%%:*}"; return 0; }
	done
	return 1
}

# slurm_versions: the table's versions, oldest first, on one line.
slurm_versions() {
	local p picked=()
	for p in $SLURM_RELEASES; do picked+=("${p%%:*}"); done
	echo "${picked[*]}"
}

# slurm_versions_with TEST: those that have a feature (TEST: one of the
# release_has_* below).
slurm_versions_with() {
	local v picked=()
	for v in $(slurm_versions); do
		if "$1" "$v"; then picked+=("$v"); fi
	done
	echo "${picked[*]}"
}

# debian_releases: the table's releases, oldest Slurm first, on one line.
debian_releases() {
	local p picked=()
	for p in $SLURM_RELEASES; do picked+=("${p#*:}"); done
	echo "${picked[*]}"
}

# or_list "WORD..." [PREFIX]: the words as a phrase, each after PREFIX:
# "22.05, 24.11 or 26.05", "--slurm 24.11 or --slurm 26.05".
or_list() {
	local words=() i phrase=''
	read -r -a words <<<"$1"
	for ((i = 0; i < ${#words[@]}; i++)); do
		if ((i > 0)); then
			if ((i == ${#words[@]} - 1)); then phrase+=' or '; else phrase+=', '; fi
		fi
		phrase+=${2-}${words[i]}
	done
	echo "$phrase"
}

# slurm_at_least VERSION MIN: is VERSION (major.minor) MIN or later?
slurm_at_least() {
	local a b
	[[ $1 =~ ^([0-9]+)\.([0-9]+)$ ]] || return 1
	a=$((10#${BASH_REMATCH[1]} * 100 + 10#${BASH_REMATCH[2]}))
	[[ $2 =~ ^([0-9]+)\.([0-9]+)$ ]] || return 1
	b=$((10#${BASH_REMATCH[1]} * 100 + 10#${BASH_REMATCH[2]}))
	((a >= b))
}

# The first Slurm with auth/slurm and cred/slurm (one slurm.key, no munged).
AUTH_SLURM_SINCE=23.11

# release_has_auth_slurm VERSION: Slurm VERSION has auth/slurm.
release_has_auth_slurm() { slurm_at_least "$1" "$AUTH_SLURM_SINCE"; }

# release_has_sackd VERSION: Debian ships sackd with Slurm VERSION (the
# daemon that signs a login host's credentials under auth/slurm; it came
# with auth/slurm).
release_has_sackd() { slurm_at_least "$1" "$AUTH_SLURM_SINCE"; }

# release_has_cgroup_disabled VERSION: Slurm VERSION knows
# CgroupPlugin=disabled (23.02 on; 22.05 does not).
release_has_cgroup_disabled() { slurm_at_least "$1" 23.02; }

# release_has_switch_as_node_rank VERSION: Slurm VERSION has
# TopologyParam=SwitchAsNodeRank, which orders a job's nodes by switch
# (22.05 has not; 24.11 is the oldest here that has it).
release_has_switch_as_node_rank() { slurm_at_least "$1" 24.11; }
