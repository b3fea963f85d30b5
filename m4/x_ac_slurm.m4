# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_SLURM: find slurm/spank.h and the directory slurmstepd loads plugins from.
#   --with-slurm=PREFIX         where Slurm is installed (default: search)
#   --with-slurm-plugindir=DIR  where to install distenv.so (default: from Slurm)
AC_DEFUN([X_AC_SLURM], [
  AC_ARG_WITH([slurm],
    [AS_HELP_STRING([--with-slurm=PREFIX], [Slurm installation prefix])],
    [], [with_slurm=check])
  AC_ARG_WITH([slurm-plugindir],
    [AS_HELP_STRING([--with-slurm-plugindir=DIR], [install the SPANK plugin in DIR])],
    [], [with_slurm_plugindir=check])

  AS_IF([test "x$with_slurm" = xno],
    [AC_MSG_ERROR([distenv is a Slurm plugin: --without-slurm is not supported])])
  AS_IF([test "x$with_slurm" = xcheck],
    [x_ac_slurm_prefixes="/usr /usr/local /opt/slurm /opt/slurm/current /usr/local/slurm"],
    [x_ac_slurm_prefixes="$with_slurm"])

  AC_MSG_CHECKING([for slurm/spank.h])
  x_ac_slurm_dir=""
  for d in $x_ac_slurm_prefixes; do
    AS_IF([test -f "$d/include/slurm/spank.h"], [x_ac_slurm_dir="$d"; break])
  done
  AS_IF([test -z "$x_ac_slurm_dir"], [
    AC_MSG_RESULT([no])
    AC_MSG_ERROR([slurm/spank.h not found in: $x_ac_slurm_prefixes
  Install Slurm's development headers (Debian/Ubuntu: libslurm-dev) or pass --with-slurm=PREFIX])])
  AC_MSG_RESULT([$x_ac_slurm_dir/include])
  AS_IF([test "$x_ac_slurm_dir" = /usr], [SLURM_CPPFLAGS=""],
    [SLURM_CPPFLAGS="-I$x_ac_slurm_dir/include"])

  save_CPPFLAGS="$CPPFLAGS"
  CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"
  AC_CHECK_HEADER([slurm/spank.h], [],
    [AC_MSG_ERROR([slurm/spank.h in $x_ac_slurm_dir does not compile])])
  AC_MSG_CHECKING([Slurm version from slurm/slurm_version.h])
  AC_COMPUTE_INT([x_ac_slurm_vnum], [SLURM_VERSION_NUMBER],
    [#include <slurm/slurm_version.h>], [x_ac_slurm_vnum=0])
  AC_MSG_RESULT([$x_ac_slurm_vnum])
  # As "24.11.5": 22.05's header has only the number, no version string.
  # Slurm loads a plugin only when its major.minor matches this one's.
  AC_MSG_CHECKING([the Slurm release these headers are from])
  SLURM_VERSION=unknown
  AS_IF([test "$x_ac_slurm_vnum" -gt 0], [
    AC_COMPUTE_INT([x_ac_slurm_vmaj], [SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER)],
      [#include <slurm/slurm_version.h>], [x_ac_slurm_vmaj=0])
    AC_COMPUTE_INT([x_ac_slurm_vmin], [SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER)],
      [#include <slurm/slurm_version.h>], [x_ac_slurm_vmin=0])
    AC_COMPUTE_INT([x_ac_slurm_vmic], [SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER)],
      [#include <slurm/slurm_version.h>], [x_ac_slurm_vmic=0])
    SLURM_VERSION=`printf '%d.%02d.%d' "$x_ac_slurm_vmaj" "$x_ac_slurm_vmin" "$x_ac_slurm_vmic"`
  ])
  AC_MSG_RESULT([$SLURM_VERSION])
  AS_IF([test "$SLURM_VERSION" = unknown],
    [AC_MSG_WARN([no SLURM_VERSION_NUMBER in slurm/slurm_version.h: the plugin cannot tell which Slurm it was built for])])
  AC_DEFINE_UNQUOTED([DISTENV_SLURM_VERSION], ["$SLURM_VERSION"],
    [Slurm release whose headers distenv was built against, e.g. "26.05.5"])
  AC_SUBST([SLURM_VERSION])
  CPPFLAGS="$save_CPPFLAGS"

  AC_MSG_CHECKING([for the Slurm plugin directory])
  AS_IF([test "x$with_slurm_plugindir" != xcheck && test "x$with_slurm_plugindir" != xyes], [
    slurmplugindir="$with_slurm_plugindir"
  ], [
    slurmplugindir=""
    # Debian/Ubuntu multiarch, then the upstream default layouts.
    for d in $x_ac_slurm_dir/lib/*/slurm-wlm $x_ac_slurm_dir/lib64/slurm \
             $x_ac_slurm_dir/lib/slurm $x_ac_slurm_dir/lib/*/slurm; do
      AS_IF([test -f "$d/auth_munge.so" || test -f "$d/select_cons_tres.so"],
        [slurmplugindir="$d"; break])
    done
    AS_IF([test -z "$slurmplugindir"], [slurmplugindir='${libdir}/slurm'])
  ])
  AC_MSG_RESULT([$slurmplugindir])
  AC_SUBST([SLURM_CPPFLAGS])
  AC_SUBST([slurmplugindir])
])
