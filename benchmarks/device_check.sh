#!/usr/bin/env bash
# The GPU check, in one call on the GPU machine (doc/gpu.md): the CUDA tests, then the notebook's solve timed
# on the CPU and on CUDA side by side (benchmarks.devices). Everything it prints and writes goes to $OUT.
#   OUT=DIR [EPISODES=100] [PYTHON=python3] [TESTS='pytest arguments'] benchmarks/device_check.sh
# With .whl/ carried (python -m tools.device_wheels), the wheels the machine lacks are installed first.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT to the folder for the results}"
EPISODES=${EPISODES:-100}
PYTHON=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
WHEELS=${WHEELS:-.whl}
if compgen -G "$WHEELS/*.whl" >/dev/null; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl
    export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
"$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available() and torch.cuda.get_device_name())' \
    | tee "$OUT/machine.txt"
# TESTS: which tests (make test gives the CUDA ones alone, which skip on a CPU: it runs the rest itself)
read -r -a tests <<< "${TESTS:-tests/test_devices.py tests/test_gpu_path.py}"
"$PYTHON" -m pytest -q -p no:cacheprovider "${tests[@]}" 2>&1 | tee "$OUT/tests.log"
devices=(cpu)
"$PYTHON" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' && devices+=(cuda)
"$PYTHON" -m benchmarks.devices --devices "${devices[@]}" --episodes "$EPISODES" --out "$OUT/devices.json" 2>&1 \
    | tee "$OUT/devices.log"
