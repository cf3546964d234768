#!/usr/bin/env bash
# Runs a command with private object-store emulators: starts s3rver, Azurite,
# their fault proxies and the SigV4-verifying proxy in front of s3rver
# (scripts/emulators.sh) on free loopback ports in a fresh run directory,
# exports their CX_TEST_* endpoints and CX_TEST_REQUIRE_EMULATORS=1 (so tests
# that need them fail loudly rather than skip), runs the command and stops
# the emulators whatever happens.  Exits with the command's status.
# As root, where tmpfs can be mounted, it also mounts a 20 MB tmpfs that any
# user may write (mode 1777, like /tmp) and exports its path as
# CX_TEST_SMALL_DISK, for tests of a full disk (t/101_full_disk.pl).
#
#   scripts/with-emulators.sh storage/build/cx_tests s3
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
export CX_EMU_RUN=$(mktemp -d /tmp/ctxstore-emu.XXXXXX)
export CX_EMU_PORTS=auto
export CX_TEST_REQUIRE_EMULATORS=1

small_disk=
cleanup() {
  bash "$repo/scripts/emulators.sh" stop
  # Lazily: a server a failed test left running may still hold files there.
  if [ -n "$small_disk" ]; then
    umount -l "$small_disk"
    rmdir "$small_disk"
  fi
  rm -rf "$CX_EMU_RUN"
}
trap cleanup EXIT

if [ "$(id -u)" -eq 0 ]; then
  small_disk=$(mktemp -d /tmp/ctxstore-disk.XXXXXX)
  if mount -t tmpfs -o size=20m,mode=1777 tmpfs "$small_disk" 2>/dev/null; then
    export CX_TEST_SMALL_DISK=$small_disk
  else
    rmdir "$small_disk"
    small_disk=
  fi
fi

if bash "$repo/scripts/emulators.sh" start; then
  . "$CX_EMU_RUN/env"
else
  echo "with-emulators: emulators did not start; tests that need them will fail"
fi
"$@"
