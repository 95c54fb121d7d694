#!/usr/bin/env bash
# The A2A tests' package: the official A2A Python SDK (a2a-sdk, with its HTTP server
# extra), in a virtual environment of its own: it is the client that reaches `a2e serve
# --a2a` in the tests.
# Idempotent and quick when it is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${A2E_CI_TOOLS:=$PWD/.ci-tools}"
mkdir -p "$A2E_CI_TOOLS"

A2A_SDK_VERSION="1.3.0"

venv="$A2E_CI_TOOLS/a2a-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -m pip freeze 2>/dev/null | grep -qx "a2a-sdk==$A2A_SDK_VERSION"; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "a2a-sdk[http-server]==$A2A_SDK_VERSION"
fi
