/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include "parse.h"
#include "tap.h"

int main(void)
{
	struct de_err e;
	unsigned long v = 0;
	int b = -1;

	ok(de_parse_ulong("X", "42", 0, 100, &v, &e) == 0 && v == 42, "42 parses");
	ok(de_parse_ulong("X", "0", 0, 100, &v, &e) == 0 && v == 0, "0 parses");
	ok(de_parse_ulong("X", "100", 0, 100, &v, &e) == 0 && v == 100, "upper bound inclusive");
	ok(de_parse_ulong("X", "101", 0, 100, &v, &e) == -1, "above max rejected");
	is_str(e.msg, "X=101: out of range (expected 0..100)", "range error names input and range");
	ok(de_parse_ulong("X", "5", 10, 100, &v, &e) == -1, "below min rejected");
	ok(de_parse_ulong("SLURM_PROCID", "abc", 0, 9, &v, &e) == -1, "letters rejected");
	is_str(e.msg, "SLURM_PROCID=\"abc\": expected an integer in 0..9", "error names variable and value");
	ok(de_parse_ulong("X", "-1", 0, 9, &v, &e) == -1, "negative rejected");
	ok(de_parse_ulong("X", " 1", 0, 9, &v, &e) == -1, "leading blank rejected");
	ok(de_parse_ulong("X", "1 ", 0, 9, &v, &e) == -1, "trailing blank rejected");
	ok(de_parse_ulong("X", "", 0, 9, &v, &e) == -1, "empty rejected");
	ok(de_parse_ulong("X", "1x", 0, 9, &v, &e) == -1, "trailing junk rejected");
	ok(de_parse_ulong("X", "99999999999999999999999", 0, 0xFFFFFFFFul, &v, &e) == -1,
	   "overflow rejected");
	ok(de_parse_ulong("X", NULL, 0, 9, &v, &e) == -1, "NULL rejected");
	is_str(e.msg, "X is not set (expected an integer in 0..9)", "missing value named");
	ok(de_parse_ulong("X", "4294967295", 0, 0xFFFFFFFFul, &v, &e) == 0 && v == 4294967295ul,
	   "uint32 max parses");

	ok(de_parse_bool("F", "1", &b, &e) == 0 && b == 1, "bool 1");
	ok(de_parse_bool("F", "off", &b, &e) == 0 && b == 0, "bool off");
	ok(de_parse_bool("F", "YES", &b, &e) == 0 && b == 1, "bool YES (case-insensitive)");
	ok(de_parse_bool("F", "2", &b, &e) == -1, "bool 2 rejected");
	is_str(e.msg, "F=\"2\": expected 0|1 (or on|off, yes|no)", "bool error names input");

	/* Environment numbers: one rule and one message form for every
	 * class (counts, ranks, ports). */
	ok(de_env_ulong("GROUP_WORLD_SIZE", "2", 1, 9, &v, &e) == 0 && v == 2, "env count 2");
	ok(de_env_ulong("GROUP_WORLD_SIZE", "abc", 1, 9, &v, &e) == -1, "env count abc refused");
	is_str(e.msg, "GROUP_WORLD_SIZE \"abc\": expected a whole number in 1..9", "letters: name, value, form");
	ok(de_env_ulong("GROUP_WORLD_SIZE", "1x", 1, 9, &v, &e) == -1, "env count 1x refused");
	is_str(e.msg, "GROUP_WORLD_SIZE \"1x\": expected a whole number in 1..9", "trailing junk: name, value, form");
	ok(de_env_ulong("GROUP_WORLD_SIZE", "0", 1, 9, &v, &e) == -1, "env count 0 refused (below min)");
	is_str(e.msg, "GROUP_WORLD_SIZE \"0\": expected a whole number in 1..9", "below min: same form");
	ok(de_env_ulong("GROUP_WORLD_SIZE", "-3", 1, 4294967294ul, &v, &e) == -1, "env count -3 refused (no wrap to 2^32-3)");
	is_str(e.msg, "GROUP_WORLD_SIZE \"-3\": expected a whole number in 1..4294967294", "sign: same form");
	ok(de_env_ulong("X", "+3", 1, 9, &v, &e) == -1, "env plus sign refused");
	ok(de_env_ulong("X", " 3", 1, 9, &v, &e) == -1, "env leading blank refused");
	ok(de_env_ulong("X", "3 ", 1, 9, &v, &e) == -1, "env trailing blank refused");
	ok(de_env_ulong("X", "3\n", 1, 9, &v, &e) == -1, "env trailing newline refused");
	ok(de_env_ulong("X", "0x10", 0, 99, &v, &e) == -1, "env hex refused");
	ok(de_env_ulong("X", "4294967295", 0, 4294967294ul, &v, &e) == -1, "env 2^32-1 (DE_UNSET) refused for a rank");
	ok(de_env_ulong("X", "18446744073709551616", 0, 4294967294ul, &v, &e) == -1, "env overflow of unsigned long refused");
	is_str(e.msg, "X \"18446744073709551616\": expected a whole number in 0..4294967294", "overflow: same form");
	ok(de_env_ulong("RANK", "0", 0, 4294967294ul, &v, &e) == 0 && v == 0, "env rank 0");
	ok(de_env_ulong("RANK", "007", 0, 4294967294ul, &v, &e) == 0 && v == 7, "env leading zeros are decimal, not octal");
	ok(de_env_ulong("MASTER_PORT", "65535", 1, 65535, &v, &e) == 0 && v == 65535, "env port 65535");
	ok(de_env_ulong("MASTER_PORT", "70000", 1, 65535, &v, &e) == -1, "env port 70000 refused");
	is_str(e.msg, "MASTER_PORT \"70000\": expected a whole number in 1..65535", "port: name, value, range");
	ok(de_env_ulong("MASTER_PORT", "0", 1, 65535, &v, &e) == -1, "env port 0 refused");
	ok(de_env_ulong("RANK", "", 0, 9, &v, &e) == -1, "env empty refused");
	is_str(e.msg, "RANK is empty: expected a whole number in 0..9", "empty is 'empty', not 'not set'");
	ok(de_env_ulong("RANK", NULL, 0, 9, &v, &e) == -1, "env unset refused where required");
	is_str(e.msg, "RANK is not set: expected a whole number in 0..9", "unset is 'not set'");
	v = 42;
	ok(de_env_ulong("X", "abc", 0, 9, &v, &e) == -1 && v == 42, "env failure leaves the output alone");

	/* Flags: the same spellings as plugstack force=, anything else by name. */
	b = -1;
	ok(de_env_flag("DISTENV_INSECURE", NULL, &b, &e) == 0 && b == 0, "flag unset: off");
	ok(de_env_flag("DISTENV_INSECURE", "1", &b, &e) == 0 && b == 1, "flag 1");
	ok(de_env_flag("DISTENV_INSECURE", "0", &b, &e) == 0 && b == 0, "flag 0");
	ok(de_env_flag("DISTENV_INSECURE", "yes", &b, &e) == 0 && b == 1, "flag yes");
	ok(de_env_flag("DISTENV_INSECURE", "False", &b, &e) == 0 && b == 0, "flag False (case-insensitive)");
	ok(de_env_flag("DISTENV_INSECURE", "On", &b, &e) == 0 && b == 1, "flag On");
	ok(de_env_flag("DISTENV_INSECURE", "no", &b, &e) == 0 && b == 0, "flag no");
	ok(de_env_flag("DISTENV_INSECURE", "y", &b, &e) == -1, "flag y refused");
	is_str(e.msg, "DISTENV_INSECURE \"y\": expected 1 or 0 (also yes/no, true/false, on/off)", "flag error: name, value, forms");
	ok(de_env_flag("DISTENV_INSECURE", "2", &b, &e) == -1, "flag 2 refused");
	ok(de_env_flag("DISTENV_INSECURE", " 1", &b, &e) == -1, "flag with a blank refused");
	ok(de_env_flag("DISTENV_INSECURE", "", &b, &e) == -1, "flag empty refused");
	is_str(e.msg, "DISTENV_INSECURE is empty: expected 1 or 0 (also yes/no, true/false, on/off)", "flag empty named");

	/* Strings: only emptiness is the parser's; the value is its reader's. */
	ok(de_env_str("MASTER_ADDR", NULL, "a host name", &e) == 0, "string unset passes (the caller decides)");
	ok(de_env_str("MASTER_ADDR", "node1", "a host name", &e) == 0, "string set passes");
	ok(de_env_str("MASTER_ADDR", "", "a host name", &e) == -1, "string empty refused");
	is_str(e.msg, "MASTER_ADDR is empty: expected a host name", "string empty named with what was expected");
	return tap_done();
}
