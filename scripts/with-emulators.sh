#!/usr/bin/env bash
# Runs a command with private object-store emulators: starts s3rver, Azurite,
# their fault proxies and the SigV4-verifying proxy in front of s3rver
# (scripts/emulators.sh) on free loopback ports in a fresh run directory,
# exports their CX_TEST_* endpoints and CX_TEST_REQUIRE_EMULATORS=1 (so tests
# that need them fail loudly rather than skip), runs the command and stops
# the emulators whatever happens.  Exits with the command's status.
#
#   scripts/with-emulators.sh storage/build/cx_tests s3
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
export CX_EMU_RUN=$(mktemp -d /tmp/ctxstore-emu.XXXXXX)
export CX_EMU_PORTS=auto
export CX_TEST_REQUIRE_EMULATORS=1

cleanup() {
  bash "$repo/scripts/emulators.sh" stop
  rm -rf "$CX_EMU_RUN"
}
trap cleanup EXIT

if bash "$repo/scripts/emulators.sh" start; then
  . "$CX_EMU_RUN/env"
else
  echo "with-emulators: emulators did not start; tests that need them will fail"
fi
"$@"
