#!/usr/bin/env bash
# The npm `jsonrepair` package, for the ontheia crate's differential repair test
# (ontheia/tests/repair_differential.rs). Idempotent: a no-op when the pinned
# version is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="3.15.0"
TOOLS="${A2E_CI_TOOLS:-$PWD/.ci-tools}"
PREFIX="$TOOLS/node"
PKG="$PREFIX/node_modules/jsonrepair/package.json"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "ontheia: installing node and npm"
    apt-get update -qq >/dev/null && apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "ontheia: node/npm not found; the repair differential test needs them" >&2
    exit 1
  fi
fi

if [ -f "$PKG" ] && grep -q "\"version\": \"$VERSION\"" "$PKG"; then
  echo "ontheia: jsonrepair@$VERSION already installed"
  exit 0
fi

mkdir -p "$PREFIX"
npm install --silent --no-audit --no-fund --prefix "$PREFIX" "jsonrepair@$VERSION"
echo "ontheia: installed jsonrepair@$VERSION into $PREFIX"
