#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Ansible playbooks end to end, for tests/run: two Debian 12 systemd
# containers as VMs, site.yml twice (changed=0), munge, sinfo, srun, the
# smoke playbook, the shared path, teardown.yml (see tests/ansible/e2e).
# TAP with its plan; skips itself (1..0 # SKIP) when not root or when
# systemd-nspawn, mmdebstrap or ansible are missing. About 5 minutes.
exec "$(dirname "$0")/e2e" "$@"
