# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# ports.sh: free_port, for the test files that run ranks on 127.0.0.1.
#
#   . "$here/../lib/ports.sh"
#   MASTER_PORT=$(free_port)
#
# A port below the kernel's ephemeral range (32768 up, by default), so
# that no outgoing connection of another test running beside this one can
# take it between the pick and the listen, and that nothing listens on now
# (bash's /dev/tcp, not python3: package build roots have none).
free_port() {
	local p i
	for ((i = 0; i < 200; i++)); do
		p=$((20000 + RANDOM % 12000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || break
	done
	echo "$p"
}
