/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include "pace.h"
#include "tap.h"

int main(void)
{
	ok(de_pace_pure_spin(1, 0), "a CPU per local rank, no switches: pure spin");
	ok(de_pace_pure_spin(1, DE_PACE_SHARED_SWITCHES - 1), "one switch short of the limit: still pure");
	ok(!de_pace_pure_spin(1, DE_PACE_SHARED_SWITCHES), "at the limit: yield from the start");
	ok(!de_pace_pure_spin(0, 0), "more local ranks than CPUs: never pure");
	is_int((long long)de_pace_send_max(1u << 20, 1448, 1u << 20), DE_PACE_SEND_PIECE,
	       "1 MiB span on Ethernet's MSS: 32 KiB sends");
	is_int((long long)de_pace_send_max(DE_PACE_BIG_SPAN, 1448, 1u << 20), 1l << 20,
	       "a 128 KiB span: whole sends (256 KiB over 2 ranks was slower in pieces)");
	is_int((long long)de_pace_send_max(DE_PACE_BIG_SPAN + 4, 1448, 1u << 20), DE_PACE_SEND_PIECE,
	       "just above 128 KiB: pieces");
	is_int((long long)de_pace_send_max(64u << 20, 65483, 1u << 20), 1l << 20,
	       "loopback's MSS: 1 MiB sends at any span");
	is_int((long long)de_pace_send_max(64u << 20, 8948, 1u << 20), DE_PACE_SEND_PIECE,
	       "jumbo frames' MSS counts as small");
	is_int((long long)de_pace_send_max(64u << 20, 0, 1u << 20), 1l << 20, "MSS unknown: whole sends");
	is_int((long long)de_pace_send_max(64u << 20, 1448, 16u << 10), 16l << 10,
	       "a chunk below the piece is never raised");
	return tap_done();
}
