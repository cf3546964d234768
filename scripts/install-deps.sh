#!/usr/bin/env bash
# Installs every system dependency ctxstore needs on a fresh Debian 12 machine.
# Run as root. Idempotent: packages already present are left alone.
set -euo pipefail

packages=(
  build-essential pkg-config
  postgresql-15 postgresql-server-dev-15 postgresql-15-cron
  libcurl4-openssl-dev libssl-dev libzstd-dev libexpat1-dev zlib1g-dev libjansson-dev libavro-dev
  libipc-run-perl cppcheck
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)

if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Debian's postgresql package creates and starts a default cluster; ctxstore's
# scripts run their own clusters, so the packaged one is left as it is.
echo "install-deps: done"
