#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Ansible playbooks end to end on Debian 13 (Slurm 24.11, slurmctld as
# the slurm user, Type=notify units): the same checks as test-ansible.sh
# (see tests/ansible/e2e), on trixie containers, with distenv installed
# from its Debian packages (--debs: scripts/build-deb, distenv_debs). The
# bookworm file covers the build from source. About 5 minutes.
exec "$(dirname "$0")/e2e" --release trixie --debs "$@"
