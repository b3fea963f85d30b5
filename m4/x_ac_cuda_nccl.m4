# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_CUDA_NCCL: the NCCL backend of distenv-check, compiled against the
# CUDA runtime's and NCCL's headers. Nothing links the libraries:
# distenv-check loads them at run time (dlopen) when the backend is asked
# for, so one binary runs on CPU nodes. The directories the libraries are
# in here are baked in as the loader's second place to look.
#   --with-cuda=PREFIX  (default: /usr/local/cuda if its headers are there)
#   --with-nccl=PREFIX  (default: the CUDA prefix, then the system)
AC_DEFUN([X_AC_CUDA_NCCL], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda=PREFIX], [CUDA installation (default: /usr/local/cuda if present)])],
    [], [with_cuda=check])
  AC_ARG_WITH([nccl],
    [AS_HELP_STRING([--with-nccl=PREFIX], [NCCL installation (default: the CUDA prefix or system)])],
    [], [with_nccl=check])
  have_nccl=no
  distenv_nccl_summary="no (CUDA not found)"
  CUDA_CPPFLAGS=""; DL_LIBS=""
  AS_IF([test "x$with_cuda" = xcheck], [with_cuda=/usr/local/cuda; x_ac_cuda_opt=yes],
        [x_ac_cuda_opt=no])
  AS_IF([test "x$with_cuda" = xno || test "x$with_nccl" = xno], [
    distenv_nccl_summary="no (disabled)"
  ], [
    AS_IF([test "x$with_nccl" = xcheck || test "x$with_nccl" = xyes], [with_nccl="$with_cuda"])
    save_CPPFLAGS="$CPPFLAGS"; save_LIBS="$LIBS"
    CPPFLAGS="$CPPFLAGS -I$with_cuda/include -I$with_nccl/include"
    x_ac_ok=yes
    AC_CHECK_HEADER([cuda_runtime_api.h], [], [x_ac_ok=no])
    AS_IF([test $x_ac_ok = yes], [AC_CHECK_HEADER([nccl.h], [], [x_ac_ok=no])])
    # dlopen is in libc from glibc 2.34, in libdl before.
    AS_IF([test $x_ac_ok = yes], [
      LIBS=""
      AC_SEARCH_LIBS([dlopen], [dl], [DL_LIBS="$LIBS"], [x_ac_ok=no])
    ])
    CPPFLAGS="$save_CPPFLAGS"; LIBS="$save_LIBS"
    AS_IF([test $x_ac_ok = yes], [
      have_nccl=yes
      CUDA_CPPFLAGS="-I$with_cuda/include -I$with_nccl/include"
      # Where the libraries are on this machine, else where they would be.
      x_ac_cuda_libdir=""; x_ac_nccl_libdir=""
      for d in "$with_cuda/lib64" "$with_cuda/lib"; do
        AS_IF([test -z "$x_ac_cuda_libdir" && ls "$d"/libcudart.so.* >/dev/null 2>&1], [x_ac_cuda_libdir="$d"])
      done
      for d in "$with_nccl/lib64" "$with_nccl/lib"; do
        AS_IF([test -z "$x_ac_nccl_libdir" && test -e "$d/libnccl.so.2"], [x_ac_nccl_libdir="$d"])
      done
      AS_IF([test -z "$x_ac_cuda_libdir"], [x_ac_cuda_libdir="$with_cuda/lib64"])
      AS_IF([test -z "$x_ac_nccl_libdir"], [x_ac_nccl_libdir="$with_nccl/lib64"])
      AC_DEFINE_UNQUOTED([DE_CUDA_LIBDIR], ["$x_ac_cuda_libdir"],
        [Where distenv-check looks for libcudart after the loader's default search])
      AC_DEFINE_UNQUOTED([DE_NCCL_LIBDIR], ["$x_ac_nccl_libdir"],
        [Where distenv-check looks for libnccl.so.2 after the loader's default search])
      distenv_nccl_summary="yes (headers from $with_cuda, $with_nccl; libnccl.so.2 and libcudart loaded at run time, also from $x_ac_nccl_libdir, $x_ac_cuda_libdir)"
    ], [
      AS_IF([test $x_ac_cuda_opt = no],
        [AC_MSG_ERROR([--with-cuda=$with_cuda given but cuda_runtime_api.h and nccl.h (or dlopen) not usable there])])
      distenv_nccl_summary="no (cuda_runtime_api.h/nccl.h not found under $with_cuda, $with_nccl)"
    ])
  ])
  AS_IF([test $have_nccl = yes], [AC_DEFINE([HAVE_NCCL], [1], [Build the NCCL backend])])
  AM_CONDITIONAL([HAVE_NCCL], [test $have_nccl = yes])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([DL_LIBS])
])
