#!/usr/bin/env bash
# One-shot CUDA run for a lent GPU machine (no network; its own python3 with torch/CuPy/Triton).
# Runs the CUDA tests, `spectra check --device cuda`, the core benchmark on CUDA, the strategy
# comparison and the domain benchmarks (quick); writes JSON/logs under $OUT. Target: < 5 min.
#   usage (from the repo root):  OUT=/tmp/out bash benchmarks/gpu.sh
set -uo pipefail
OUT="${OUT:-$(pwd)/bench-results}"
mkdir -p "$OUT"
export OUT
export PYTHONPATH="$(pwd)${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
py="${PYTHON:-python3}"
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  "$py" -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name())"
  "$py" -c "import cupy; print('cupy', cupy.__version__)" 2>/dev/null || echo "no cupy"
} 2>&1 | tee "$OUT/env.txt"

# 1. CUDA tests (modules whose optional deps are missing here are skipped at collection)
timeout 150 "$py" -m pytest -q -p no:cacheprovider -m cuda --continue-on-collection-errors \
  -o addopts="" tests 2>&1 | tail -40 | tee "$OUT/cuda-tests.txt"

# 2. the install check on the GPU
timeout 60 "$py" -m spectra.cli check --device cuda --quick --json "$OUT/check-cuda.json" \
  2>&1 | tail -8

# 3. the core benchmark (the seed table) on CUDA, and the planner's strategy timings
timeout 120 "$py" -m spectra.cli bench --device cuda --quick --json "$OUT/bench-cuda.json" 2>&1 \
  | tail -16
timeout 60 "$py" - <<'PY' 2>&1
import json, os, torch, spectra.core as core
from spectra.core._pipeline._autotune import autotune as _autotune
rows = []
for n, batch in [(32, 4096), (33, 4096), (64, 1024), (128, 256)]:
    for dtype in (torch.float32, torch.float64):
        best, timings = _autotune(n, batch, dtype, torch.device("cuda", 0), True, 1)
        rows.append({"n": n, "batch": batch, "dtype": str(dtype), "best": best,
                     "timings_s": dict(timings)})
        print(n, batch, dtype, best, {k: round(v * 1e3, 3) for k, v in timings})
json.dump(rows, open(os.path.join(os.environ["OUT"], "strategies.json"), "w"), indent=1)
PY

# 4. domain benchmarks, quick, on CUDA, into one JSON (at most 8 files come back)
timeout 150 "$py" - <<'PY' 2>&1
import importlib, json, os, traceback
out = {}
for d in ("pca", "tightbinding", "graph", "stiefel"):
    try:
        out[d] = importlib.import_module(f"benchmarks.bench_{d}").run(quick=True, device="cuda")
        print(d, "done")
    except Exception:
        out[d] = {"error": traceback.format_exc(limit=3)}
        print(d, "failed:", out[d]["error"][-300:])
json.dump(out, open(os.path.join(os.environ["OUT"], "bench-domains.json"), "w"), indent=1,
          default=str)
PY
ls -la "$OUT"
