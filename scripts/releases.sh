# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# releases.sh: which Debian release's archive ships which Slurm, the one
# table distenv-cluster, build-deb and the tests share (sourced, defines
# functions only). Both print nothing and return 1 for an unknown value.

# release_of VERSION: the Debian release that ships Slurm VERSION.
release_of() {
	case $1 in
	22.05) echo bookworm ;;
	24.11) echo trixie ;;
	26.05) echo sid ;;
	*) return 1 ;;
	esac
}

# slurm_of RELEASE: the Slurm that Debian RELEASE ships.
slurm_of() {
	case $1 in
	bookworm) echo 22.05 ;;
	trixie) echo 24.11 ;;
	sid) echo 26.05 ;;
	*) return 1 ;;
	esac
}
