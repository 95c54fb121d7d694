#!/usr/bin/env bash
# a2e-journal's external package: nats-server with JetStream (Debian package
# `nats-server`, 2.9 in Debian 12), which the JetStream store's tests start
# themselves (`nats-server -js` on a free loopback port, a temporary store).
# Writes `export A2E_NATS_SERVER=…` to $A2E_CI_TOOLS/env (Debian installs it
# under /usr/sbin, which a non-root PATH may lack). Idempotent: nothing is
# installed when the server is there.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${A2E_CI_TOOLS:=$PWD/.ci-tools}"
mkdir -p "$A2E_CI_TOOLS"

find_server() {
  command -v nats-server 2>/dev/null || { [ -x /usr/sbin/nats-server ] && echo /usr/sbin/nats-server; } || true
}

server="$(find_server)"
if [ -z "$server" ]; then
  if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
  elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo -n)
  else
    # The JetStream tests then fail under CI, naming the missing package.
    echo "install-nats: nats-server is missing and this user cannot install packages" >&2
    exit 0
  fi
  "${SUDO[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq nats-server
  server="$(find_server)"
fi
if [ -n "$server" ]; then
  echo "install-nats: $("$server" --version)"
  echo "export A2E_NATS_SERVER=$server" >>"$A2E_CI_TOOLS/env"
fi
