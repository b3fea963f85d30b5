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
	return tap_done();
}
