#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""pack-source.py SRC DEST: a source tarball of the distenv checkout SRC.

Runs on the Ansible controller. The files are those git tracks plus the
untracked ones it does not ignore (every file when SRC is not a git
checkout), under the prefix distenv-src/. The tarball is byte-for-byte
the same for the same files (sorted, zero mtimes and owners), so copying
it to a node changes nothing until the sources change.
"""
import gzip
import io
import os
import subprocess
import sys
import tarfile


def list_files(src):
    if os.path.exists(os.path.join(src, ".git")):
        out = subprocess.run(
            ["git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            check=True, capture_output=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    else:
        names = []
        for d, dirs, files in os.walk(src):
            dirs[:] = [x for x in dirs if x != ".git"]
            names += [os.path.relpath(os.path.join(d, f), src) for f in files]
    # Deleted but still listed by git, or Python caches: skip.
    return sorted(n for n in set(names)
                  if os.path.isfile(os.path.join(src, n)) and "__pycache__" not in n.split("/"))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: pack-source.py SRC DEST")
    src, dest = sys.argv[1], sys.argv[2]
    if not os.path.isfile(os.path.join(src, "configure.ac")):
        sys.exit(f"pack-source.py: {src} is not a distenv checkout (no configure.ac)")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in list_files(src):
            path = os.path.join(src, name)
            info = tarfile.TarInfo("distenv-src/" + name)
            info.size = os.path.getsize(path)
            info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            info.mtime = 0
            with open(path, "rb") as f:
                tar.addfile(info, f)
    with open(dest, "wb") as out:
        with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as gz:
            gz.write(raw.getvalue())


if __name__ == "__main__":
    main()
