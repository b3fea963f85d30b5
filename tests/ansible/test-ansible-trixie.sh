#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Ansible playbooks end to end on Debian 13 (Slurm 24.11, slurmctld as
# the slurm user, Type=notify units): the same checks as test-ansible.sh
# (see tests/ansible/e2e), on trixie containers, with distenv installed
# from its Debian packages (--debs: scripts/build-deb, distenv_debs). The
# bookworm file covers the build from source. Test bed 1 (its own bridge,
# dea1, and subnet), so that it runs beside test-ansible.sh's. About 5
# minutes.
export TB_ID=${TB_ID:-1}
exec "$(dirname "$0")/e2e" --release trixie --debs "$@"
