#!/usr/bin/env bash
# Configures and builds one qemu linux-user binary from QEMU's source tarball
# (the pinned Debian .orig tarball, @qemu_source//:orig_tarball), with TCG
# plugin support and nothing else optional. Run by //tools/qemu:qemu.bzl's
# action; by hand:
#
#   tools/qemu/build_qemu.sh TARBALL PYTHON TARGET OUT
#
#   TARBALL  qemu_10.0.2+ds.orig.tar.xz
#   PYTHON   an interpreter that has meson 1.5.0 and pycotap 1.3.1
#            (@qemu_build_env//:python3; Debian's +ds tarball lacks the wheels
#            upstream ships in python/wheels, and configure runs offline)
#   TARGET   a linux-user target, e.g. riscv64-linux-user (builds qemu-riscv64)
#   OUT      where to write the binary
#
# Needs on the machine: a C compiler, ninja (Debian ninja-build), pkg-config and
# glib (libglib2.0-dev); tools/bazel installs them. The binary links the
# machine's glib dynamically, as Debian's qemu-user does.
set -euo pipefail

[[ $# -eq 4 ]] || { echo "usage: $0 TARBALL PYTHON TARGET OUT" >&2; exit 2; }
tarball="$(readlink -f "$1")"
python="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
target="$3"
out="$(cd "$(dirname "$4")" && pwd)/$(basename "$4")"
program="qemu-${target%-linux-user}"

# QEMU's code generators are Python (decodetree.py's decoders come out in set
# order): a fixed hash seed makes the binary the same on every build.
export PYTHONHASHSEED=0

work="$(mktemp -d "${TMPDIR:-/tmp}/qemu-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

fail() {
  echo "build_qemu: $1 failed; the last lines of $2:" >&2
  tail -n 25 "$work/$2" >&2
  exit 1
}

# roms/ (firmware sources, 270 MB unpacked) is for system emulation only.
tar -x -f "$tarball" -C "$work" --no-same-owner --exclude='*/roms/*'
src=("$work"/qemu-*)
[[ ${#src[@]} -eq 1 && -f "${src[0]}/configure" ]] || { echo "build_qemu: no qemu-*/configure in $tarball" >&2; exit 1; }
src="${src[0]}"

mkdir "$work/build"
cd "$work/build"
# The fewest features: one user-mode target, TCG plugins, no system emulation,
# tools, docs, firmware blobs, debug info or optional libraries
# (--without-default-features turns every "auto" feature off). The temporary
# directory is mapped away so the binary does not depend on where it was built.
"$src/configure" \
  --python="$python" \
  --target-list="$target" \
  --enable-plugins \
  --without-default-features \
  --disable-system \
  --disable-tools \
  --disable-docs \
  --disable-install-blobs \
  --disable-debug-info \
  --disable-werror \
  --extra-cflags="-ffile-prefix-map=$work=/qemu-build" \
  >configure.log 2>&1 || fail configure build/configure.log

ninja -j "$(nproc)" "$program" >build.log 2>&1 || fail "ninja $program" build/build.log
cp "$program" "$out"
