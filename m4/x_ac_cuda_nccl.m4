# X_AC_CUDA_NCCL: optional CUDA runtime + NCCL for the GPU backend of distenv-check.
#   --with-cuda=PREFIX  (default: auto-detect /usr/local/cuda)
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
  CUDA_CPPFLAGS=""; CUDA_LDFLAGS=""; CUDA_LIBS=""
  AS_IF([test "x$with_cuda" = xcheck], [with_cuda=/usr/local/cuda; x_ac_cuda_opt=yes],
        [x_ac_cuda_opt=no])
  AS_IF([test "x$with_cuda" = xno || test "x$with_nccl" = xno], [
    distenv_nccl_summary="no (disabled)"
  ], [
    AS_IF([test "x$with_nccl" = xcheck || test "x$with_nccl" = xyes], [with_nccl="$with_cuda"])
    x_ac_cuda_libdir="$with_cuda/lib64"
    AS_IF([test -d "$x_ac_cuda_libdir"], [], [x_ac_cuda_libdir="$with_cuda/lib"])
    x_ac_nccl_libdir="$with_nccl/lib64"
    AS_IF([test -d "$x_ac_nccl_libdir"], [], [x_ac_nccl_libdir="$with_nccl/lib"])
    save_CPPFLAGS="$CPPFLAGS"; save_LDFLAGS="$LDFLAGS"; save_LIBS="$LIBS"
    CPPFLAGS="$CPPFLAGS -I$with_cuda/include -I$with_nccl/include"
    LDFLAGS="$LDFLAGS -L$x_ac_cuda_libdir -L$x_ac_nccl_libdir"
    x_ac_ok=yes
    AC_CHECK_HEADER([cuda_runtime_api.h], [], [x_ac_ok=no])
    AS_IF([test $x_ac_ok = yes], [AC_CHECK_HEADER([nccl.h], [], [x_ac_ok=no])])
    AS_IF([test $x_ac_ok = yes], [AC_CHECK_LIB([cudart], [cudaGetDeviceCount], [], [x_ac_ok=no])])
    AS_IF([test $x_ac_ok = yes], [AC_CHECK_LIB([nccl], [ncclCommInitRank], [], [x_ac_ok=no])])
    CPPFLAGS="$save_CPPFLAGS"; LDFLAGS="$save_LDFLAGS"; LIBS="$save_LIBS"
    AS_IF([test $x_ac_ok = yes], [
      have_nccl=yes
      CUDA_CPPFLAGS="-I$with_cuda/include -I$with_nccl/include"
      # rpath: CUDA is rarely in the loader's default path.
      CUDA_LDFLAGS="-L$x_ac_cuda_libdir -L$x_ac_nccl_libdir -Wl,-rpath,$x_ac_cuda_libdir -Wl,-rpath,$x_ac_nccl_libdir"
      CUDA_LIBS="-lnccl -lcudart"
      distenv_nccl_summary="yes ($with_cuda, $with_nccl)"
    ], [
      AS_IF([test $x_ac_cuda_opt = no],
        [AC_MSG_ERROR([--with-cuda=$with_cuda given but CUDA runtime + NCCL not usable there])])
      distenv_nccl_summary="no (cuda_runtime_api.h/nccl.h/libcudart/libnccl not found under $with_cuda)"
    ])
  ])
  AS_IF([test $have_nccl = yes], [AC_DEFINE([HAVE_NCCL], [1], [Build the NCCL backend])])
  AM_CONDITIONAL([HAVE_NCCL], [test $have_nccl = yes])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_LDFLAGS])
  AC_SUBST([CUDA_LIBS])
])
