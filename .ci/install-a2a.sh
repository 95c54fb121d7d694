#!/usr/bin/env bash
# The A2A tests' packages: the official A2A Python SDK (a2a-sdk, with its HTTP server
# extra, and uvicorn to serve it), in a virtual environment of its own: the client that reaches `a2e serve
# --a2a` in the tests, and the agent a2e reaches as a client.
# Idempotent and quick when it is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${A2E_CI_TOOLS:=$PWD/.ci-tools}"
mkdir -p "$A2E_CI_TOOLS"

A2A_SDK_VERSION="1.3.0"
UVICORN_VERSION="0.38.0"

venv="$A2E_CI_TOOLS/a2a-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
have="$("$venv/bin/python" -m pip freeze 2>/dev/null | grep -iE "^(a2a-sdk|uvicorn)==" | sort | tr "\n" " " || true)"
if [ "$have" != "a2a-sdk==$A2A_SDK_VERSION uvicorn==$UVICORN_VERSION " ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "a2a-sdk[http-server]==$A2A_SDK_VERSION" "uvicorn==$UVICORN_VERSION"
fi
