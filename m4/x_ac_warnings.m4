# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_WARNINGS: strict warnings; -Werror unless --disable-werror.
AC_DEFUN([X_AC_WARNINGS], [
  AC_ARG_ENABLE([werror],
    [AS_HELP_STRING([--disable-werror], [do not treat warnings as errors])],
    [], [enable_werror=yes])
  WARN_CFLAGS="-Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes"
  AS_IF([test "x$enable_werror" = xyes], [WARN_CFLAGS="$WARN_CFLAGS -Werror"])
  AC_SUBST([WARN_CFLAGS])
])
