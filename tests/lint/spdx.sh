#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# License: every source file we wrote says GPL-2.0-or-later in an SPDX line
# in its first three lines (after a shebang or a man page's comment
# leader), COPYING holds the GPL version 2, debian/copyright says GPL-2+.
# Source files: the tracked files (git ls-files; every file of the tree in
# a tarball), less data (fuzz corpora, dictionaries, the hostname corpus),
# prose (Markdown), pictures and Debian's metadata.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
root=$(cd "$here/../.." && pwd)
cd "$root" || exit 1

# is_source FILE: is FILE a source file that must carry the line?
is_source() {
	case $1 in
	tests/fuzz/corpus/* | *.png | *.md | *.txt | *.dict | COPYING | .gitignore) return 1 ;;
	debian/changelog | debian/control | debian/copyright | debian/source/format) return 1 ;;
	debian/*.install | debian/*.lintian-overrides) return 1 ;;
	*.c | *.h | *.sh | *.py | *.m4 | *.am | *.ac | *.slurm | *.yml | *.yaml | *.j2) return 0 ;;
	*.in | *.map | *.cfg | *.service | *.[18] | */.ansible-lint | debian/rules) return 0 ;;
	esac
	# Scripts without an extension: by shebang.
	[[ $(head -c2 "$1" 2>/dev/null) == '#!' ]]
}

# Only when root is the top of a work tree: a tarball unpacked inside a
# checkout (make distcheck, build-deb) is inside git's tree but untracked.
if [[ $(git -C "$root" rev-parse --show-toplevel 2>/dev/null) == "$root" ]]; then
	mapfile -t all < <(git ls-files)
	from="git ls-files"
else
	# A tarball (make distcheck): its files, less what the build made.
	mapfile -t all < <(find . -path ./_build -prune -o -path ./autom4te.cache -prune -o -type f -print |
		sed 's|^\./||' | grep -vE '(^|/)(Makefile(\.in)?|configure|config\..*|aclocal\.m4|libtool|stamp-h1|build-aux/.*|m4/(libtool|lt.*)\.m4)$')
	from="the tree"
fi
missing=()
n=0
for f in "${all[@]}"; do
	[[ -f $f ]] || continue
	is_source "$f" || continue
	n=$((n + 1))
	head -n3 "$f" | grep -qE 'SPDX-License-Identifier: GPL-2\.0-or-later( |\*|$)' || missing+=("$f")
done
tap_like "$n" '^[1-9][0-9]+$' "source files found ($from): $n"
if ((${#missing[@]} == 0)); then
	tap_ok "every source file has an SPDX-License-Identifier: GPL-2.0-or-later line at its top"
else
	tap_fail "every source file has an SPDX-License-Identifier: GPL-2.0-or-later line at its top" \
		"${#missing[@]} without it:" "${missing[@]}"
fi

tap_like "$(head -n2 COPYING 2>/dev/null)" 'GNU GENERAL PUBLIC LICENSE.*Version 2, June 1991' \
	"COPYING is the GNU GPL version 2"
cr=$(cat debian/copyright 2>/dev/null)
tap_like "$cr" '^Format: https://www\.debian\.org/doc/packaging-manuals/copyright-format/1\.0/' \
	"debian/copyright is DEP-5"
tap_like "$cr" $'\nFiles: \\*\nCopyright: [^\n]+\nLicense: GPL-2\\+\n' "debian/copyright: Files: * under GPL-2+"
tap_like "$cr" 'either version 2 of the License, or.*\(at your option\) any later version' \
	"debian/copyright: GPL-2+ with the 'or later' grant"
tap_like "$(grep -A3 '^## License' README.md 2>/dev/null)" 'GPL-2\.0-or-later' "README has a License section"
tap_done
