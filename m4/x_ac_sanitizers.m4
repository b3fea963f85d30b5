# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_SANITIZERS: --enable-sanitizers builds the library, the tools and the
# unit tests with AddressSanitizer + UndefinedBehaviorSanitizer, stopping at
# the first report. Not the SPANK plugin: slurmstepd loads it and has no ASan
# runtime, so the plugin is not built in such a tree (DISTENV_SANITIZERS).
AC_DEFUN([X_AC_SANITIZERS], [
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers],
      [build with -fsanitize=address,undefined, for tests only (no SPANK plugin)])],
    [], [enable_sanitizers=no])
  SAN_CFLAGS=""
  SAN_LDFLAGS=""
  distenv_sanitizers_summary=no
  AS_IF([test "x$enable_sanitizers" = xyes], [
    x_ac_san="-fsanitize=address,undefined -fno-sanitize-recover=all"
    save_CFLAGS="$CFLAGS"; save_LDFLAGS="$LDFLAGS"
    CFLAGS="$CFLAGS $x_ac_san -fno-omit-frame-pointer"
    LDFLAGS="$LDFLAGS $x_ac_san"
    AC_MSG_CHECKING([whether $CC links with $x_ac_san])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no])
       AC_MSG_ERROR([--enable-sanitizers: $CC cannot link with $x_ac_san (gcc: libasan and libubsan)])])
    CFLAGS="$save_CFLAGS"; LDFLAGS="$save_LDFLAGS"
    # -U_FORTIFY_SOURCE: comes after HARDEN_CFLAGS; fortified libc calls
    # would bypass ASan's checks of the same calls.
    SAN_CFLAGS="$x_ac_san -fno-omit-frame-pointer -U_FORTIFY_SOURCE"
    SAN_LDFLAGS="$x_ac_san"
    distenv_sanitizers_summary="$SAN_CFLAGS (SPANK plugin not built)"
  ])
  AM_CONDITIONAL([DISTENV_SANITIZERS], [test "x$enable_sanitizers" = xyes])
  AC_SUBST([SAN_CFLAGS])
  AC_SUBST([SAN_LDFLAGS])
])
