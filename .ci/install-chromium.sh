#!/usr/bin/env bash
# The live view's browser test (a2e-host/tests/ui_browser.rs): Debian's
# `chromium`, run headless and driven over the DevTools protocol. Idempotent:
# nothing is installed when a chromium is on the PATH.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo -n)
else
  # The browser test then fails under CI, naming the missing package.
  echo "install-chromium: chromium is missing and this user cannot install packages" >&2
  exit 0
fi
"${SUDO[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq chromium
