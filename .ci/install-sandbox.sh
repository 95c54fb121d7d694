#!/usr/bin/env bash
# a2e-sandbox's external package: bubblewrap (`bwrap`, Debian package
# `bubblewrap`), one of the sandbox's layers (PID and network namespaces with
# --die-with-parent). Idempotent: nothing happens when `bwrap` is installed.
set -euo pipefail
if command -v bwrap >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo -n)
else
  # The bubblewrap tests then fail under CI, naming the missing package.
  echo "install-sandbox: bubblewrap is missing and this user cannot install packages" >&2
  exit 0
fi
"${SUDO[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq bubblewrap
