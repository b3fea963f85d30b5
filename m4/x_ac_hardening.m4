# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_HARDENING: stack protector, fortify, relro/now where the toolchain has them.
AC_DEFUN([X_AC_HARDENING], [
  AC_ARG_ENABLE([hardening],
    [AS_HELP_STRING([--disable-hardening], [build without hardening flags])],
    [], [enable_hardening=yes])
  HARDEN_CFLAGS=""
  HARDEN_LDFLAGS=""
  distenv_hardening_summary=no
  AS_IF([test "x$enable_hardening" = xyes], [
    save_CFLAGS="$CFLAGS"
    CFLAGS="$CFLAGS -fstack-protector-strong"
    AC_MSG_CHECKING([whether $CC accepts -fstack-protector-strong])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
      [AC_MSG_RESULT([yes]); HARDEN_CFLAGS="-fstack-protector-strong"],
      [AC_MSG_RESULT([no])])
    CFLAGS="$save_CFLAGS"
    # _FORTIFY_SOURCE needs optimisation; set it only where the user did not.
    AS_CASE([" $CPPFLAGS $CFLAGS "], [*_FORTIFY_SOURCE*], [],
      [HARDEN_CFLAGS="$HARDEN_CFLAGS -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2"])
    save_LDFLAGS="$LDFLAGS"
    LDFLAGS="$LDFLAGS -Wl,-z,relro -Wl,-z,now"
    AC_MSG_CHECKING([whether the linker accepts -z relro -z now])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])],
      [AC_MSG_RESULT([yes]); HARDEN_LDFLAGS="-Wl,-z,relro -Wl,-z,now"],
      [AC_MSG_RESULT([no])])
    LDFLAGS="$save_LDFLAGS"
    distenv_hardening_summary="$HARDEN_CFLAGS $HARDEN_LDFLAGS"
  ])
  AC_SUBST([HARDEN_CFLAGS])
  AC_SUBST([HARDEN_LDFLAGS])
])
