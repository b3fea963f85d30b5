# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_AUTH: libsodium (HMAC, random keys: required) and libmunge (the
# cluster's own authentication for the rendezvous: optional, used when
# found; without it distenv-check authenticates with DISTENV_SECRET).
AC_DEFUN([X_AC_AUTH], [
  AC_CHECK_HEADER([sodium.h], [],
    [AC_MSG_ERROR([sodium.h not found: install libsodium (Debian/Ubuntu: libsodium-dev)])])
  AC_CHECK_LIB([sodium], [crypto_auth_hmacsha256], [SODIUM_LIBS=-lsodium],
    [AC_MSG_ERROR([libsodium not found: install libsodium-dev])])
  AC_SUBST([SODIUM_LIBS])
  AC_ARG_WITH([munge],
    [AS_HELP_STRING([--without-munge], [do not use MUNGE for the rendezvous])],
    [], [with_munge=check])
  have_munge=no
  MUNGE_LIBS=""
  AS_IF([test "x$with_munge" != xno], [
    AC_CHECK_HEADER([munge.h],
      [AC_CHECK_LIB([munge], [munge_encode], [have_munge=yes; MUNGE_LIBS=-lmunge])])
    AS_IF([test "x$with_munge" = xyes && test $have_munge = no],
      [AC_MSG_ERROR([--with-munge given but munge.h/libmunge not found (libmunge-dev)])])
  ])
  AS_IF([test $have_munge = yes],
    [AC_DEFINE([HAVE_MUNGE], [1], [Authenticate the rendezvous with MUNGE])
     distenv_munge_summary="yes"],
    [distenv_munge_summary="no (DISTENV_SECRET or --insecure only)"])
  AC_SUBST([MUNGE_LIBS])
  AM_CONDITIONAL([HAVE_MUNGE], [test $have_munge = yes])
])
