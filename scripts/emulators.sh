#!/usr/bin/env bash
# Object-store emulators for the tests: s3rver and Azurite (installed from npm
# into .emulators/ of the repository, which git ignores) on loopback, each
# with a fault-injecting proxy (scripts/faultproxy.js) in front.
#
#   scripts/emulators.sh install  npm install into .emulators/ unless done
#   scripts/emulators.sh start    install if needed, start, wait until they
#                                 answer, write $CX_EMU_RUN/env
#   scripts/emulators.sh stop     stop what start started (pids in $CX_EMU_RUN)
#
# CX_EMU_RUN    run directory: pids, logs, data and the env file
#               (default .emulators/run)
# CX_EMU_PORTS  "auto" picks free ports (concurrent runs never collide);
#               otherwise the fixed defaults below, each overridable:
#   S3RVER_PORT 4568, S3_PROXY_PORT 4569, S3_PROXY_CTL_PORT 4570,
#   S3_TLS_PORT 4571, S3_SIGNED_PORT 4572, S3_SIGNED_CTL_PORT 4573,
#   AZURITE_PORT 10000, AZ_PROXY_PORT 10001, AZ_PROXY_CTL_PORT 10002
#
# The env file exports, for the tests:
#   CX_TEST_S3_ENDPOINT     s3rver itself (ignores If-None-Match)
#   CX_TEST_S3_PROXY        s3rver behind a fault proxy that also emulates
#                           If-None-Match; CX_TEST_S3_PROXY_CTL its control port
#   CX_TEST_S3_TLS_ENDPOINT s3rver over TLS with a self-signed certificate for
#                           127.0.0.1, CX_TEST_S3_TLS_CA that certificate
#   CX_TEST_S3_SIGNED_ENDPOINT  s3rver behind a proxy that verifies every
#                           request's SigV4 signature (s3rver does not) for
#                           the test credentials, and refuses bad ones as S3
#                           would; CX_TEST_S3_SIGNED_CTL its control port
#                           (stats "verified", "refused")
#   CX_TEST_FAULTPROXY      scripts/faultproxy.js (its --self-test checks the
#                           verifier against AWS's published examples)
#   CX_TEST_S3_BUCKET, CX_TEST_S3_ACCESS_KEY, CX_TEST_S3_SECRET_KEY
#   CX_TEST_AZ_ENDPOINT, CX_TEST_AZ_PROXY, CX_TEST_AZ_PROXY_CTL,
#   CX_TEST_AZ_ACCOUNT, CX_TEST_AZ_KEY
# (the emulators' well-known development credentials, not secrets).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
prefix="$repo/.emulators"
run=${CX_EMU_RUN:-$prefix/run}
bin="$prefix/node_modules/.bin"
host=127.0.0.1
bucket=ctxstore-test
# s3rver's built-in development credentials.
s3_key=S3RVER
s3_secret=S3RVER
# Azurite's documented development account.
az_account=devstoreaccount1
az_key='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

# N distinct free ports, one per line: every socket is held until all are
# bound, so the kernel cannot hand one port out twice (asking one at a time,
# it sometimes did, and two emulators met on one port).
free_ports() {
  node -e '
    const net = require("net"), n = +process.argv[1], socks = [];
    const next = () => {
      if (socks.length === n) {
        console.log(socks.map((s) => s.address().port).join("\n"));
        socks.forEach((s) => s.close());
        return;
      }
      const s = net.createServer();
      s.listen(0, "127.0.0.1", () => { socks.push(s); next(); });
    };
    next();' "$1"
}

install() {
  [ -x "$bin/s3rver" ] && [ -x "$bin/azurite-blob" ] && return 0
  echo "emulators: installing s3rver and azurite into $prefix"
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --silent s3rver@3.7.1 azurite@3.35.0 >"$prefix/npm.log" 2>&1 \
    || { cat "$prefix/npm.log"; echo "emulators: npm install failed"; return 1; }
}

# Waits until something answers HTTP on host:port (any status will do).
wait_http() {
  local name=$1 port=$2 path=${3:-/}
  for _ in $(seq 1 100); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://$host:$port$path" || true)
    [ "$code" != "000" ] && return 0
    sleep 0.1
  done
  echo "emulators: $name did not answer on port $port; log:"
  cat "$run/$name.log" || true
  return 1
}

wait_https() {
  local name=$1 port=$2
  for _ in $(seq 1 100); do
    curl -s -o /dev/null --cacert "$run/tls/cert.pem" "https://$host:$port/" && return 0
    sleep 0.1
  done
  echo "emulators: $name did not answer on port $port; log:"
  cat "$run/$name.log" || true
  return 1
}

spawn() {  # name, command...
  local name=$1; shift
  "$@" >"$run/$name.log" 2>&1 &
  echo $! >"$run/$name.pid"
}

start() {
  install
  mkdir -p "$run"
  # Test servers running as another user (the postgres user under root)
  # read the test CA from here.
  chmod 755 "$run"
  if [ -f "$run/env" ]; then
    echo "emulators: already started in $run (run stop first)"
    return 1
  fi
  if [ "${CX_EMU_PORTS:-}" = auto ]; then
    { read -r s3_port; read -r s3p_port; read -r s3c_port; read -r s3t_port
      read -r s3v_port; read -r s3vc_port
      read -r az_port; read -r azp_port; read -r azc_port; } < <(free_ports 9)
  else
    s3_port=${S3RVER_PORT:-4568}; s3p_port=${S3_PROXY_PORT:-4569}; s3c_port=${S3_PROXY_CTL_PORT:-4570}
    s3t_port=${S3_TLS_PORT:-4571}; s3v_port=${S3_SIGNED_PORT:-4572}; s3vc_port=${S3_SIGNED_CTL_PORT:-4573}
    az_port=${AZURITE_PORT:-10000}; azp_port=${AZ_PROXY_PORT:-10001}; azc_port=${AZ_PROXY_CTL_PORT:-10002}
  fi
  mkdir -p "$run/s3rver" "$run/tls"
  # s3rver encrypts its continuation tokens with DES, which OpenSSL 3 keeps in
  # its legacy provider.
  s3rver=(env NODE_OPTIONS=--openssl-legacy-provider "$bin/s3rver")
  spawn s3rver "${s3rver[@]}" -d "$run/s3rver" -a "$host" -p "$s3_port" --silent \
    --configure-bucket "$bucket"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$run/tls/key.pem" \
    -out "$run/tls/cert.pem" >"$run/tls/openssl.log" 2>&1 \
    || { cat "$run/tls/openssl.log"; stop; return 1; }
  chmod -R a+rX "$run/tls"
  spawn s3rver-tls "${s3rver[@]}" -d "$run/s3rver" -a "$host" -p "$s3t_port" --silent \
    --key "$run/tls/key.pem" --cert "$run/tls/cert.pem"
  (cd "$run" && spawn azurite "$bin/azurite-blob" --blobHost "$host" --blobPort "$az_port" \
    --inMemoryPersistence --loose --skipApiVersionCheck --silent --disableTelemetry)
  # s3rver ignores If-None-Match; through its proxy it appears to honour it.
  spawn s3proxy node "$repo/scripts/faultproxy.js" --listen "$host:$s3p_port" \
    --target "$host:$s3_port" --control "$host:$s3c_port" --emulate-conditional-put 1
  # s3rver checks only that the access key id exists; this proxy checks the
  # signature itself, with a verifier that must first pass AWS's examples.
  node "$repo/scripts/faultproxy.js" --self-test >"$run/sigv4-self-test.log" 2>&1 \
    || { cat "$run/sigv4-self-test.log"; echo "emulators: the SigV4 verifier failed its self-test"; stop; return 1; }
  spawn s3signed node "$repo/scripts/faultproxy.js" --listen "$host:$s3v_port" \
    --target "$host:$s3_port" --control "$host:$s3vc_port" --verify-sigv4 "$s3_key:$s3_secret"
  spawn azproxy node "$repo/scripts/faultproxy.js" --listen "$host:$azp_port" \
    --target "$host:$az_port" --control "$host:$azc_port"
  wait_http s3rver "$s3_port" && wait_https s3rver-tls "$s3t_port" && wait_http azurite "$az_port" "/$az_account?comp=list" &&
    wait_http s3proxy "$s3c_port" /stats && wait_http s3signed "$s3vc_port" /stats && wait_http azproxy "$azc_port" /stats \
    || { stop; return 1; }
  cat >"$run/env" <<EOF
export CX_TEST_S3_ENDPOINT=http://$host:$s3_port
export CX_TEST_S3_PROXY=http://$host:$s3p_port
export CX_TEST_S3_PROXY_CTL=http://$host:$s3c_port
export CX_TEST_S3_TLS_ENDPOINT=https://$host:$s3t_port
export CX_TEST_S3_TLS_CA=$run/tls/cert.pem
export CX_TEST_S3_BUCKET=$bucket
export CX_TEST_S3_SIGNED_ENDPOINT=http://$host:$s3v_port
export CX_TEST_S3_SIGNED_CTL=http://$host:$s3vc_port
export CX_TEST_FAULTPROXY=$repo/scripts/faultproxy.js
export CX_TEST_S3_ACCESS_KEY=$s3_key
export CX_TEST_S3_SECRET_KEY=$s3_secret
export CX_TEST_AZ_ENDPOINT=http://$host:$az_port/$az_account
export CX_TEST_AZ_PROXY=http://$host:$azp_port/$az_account
export CX_TEST_AZ_PROXY_CTL=http://$host:$azc_port
export CX_TEST_AZ_ACCOUNT=$az_account
export CX_TEST_AZ_KEY='$az_key'
EOF
  echo "emulators: s3rver :$s3_port (proxy :$s3p_port, SigV4-verifying proxy :$s3v_port), azurite :$az_port (proxy :$azp_port); env in $run/env"
}

# SIGTERM first; the emulators linger over open keep-alive connections, and
# their data is throwaway, so whatever is left after 2 s is killed.
stop() {
  local f pid alive pids=()
  for f in "$run"/*.pid; do
    [ -f "$f" ] || continue
    pids+=("$(cat "$f")")
    rm -f "$f"
  done
  if [ "${#pids[@]}" -gt 0 ]; then
    kill "${pids[@]}" 2>/dev/null || true
    for _ in $(seq 1 20); do
      alive=0
      for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
      [ "$alive" = 0 ] && break
      sleep 0.1
    done
    kill -9 "${pids[@]}" 2>/dev/null || true
  fi
  rm -rf "$run/env" "$run/s3rver" "$run/tls"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 install|start|stop"; exit 2 ;;
esac
