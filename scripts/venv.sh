#!/usr/bin/env bash
# Create or reuse ./.venv and install spectra with the extras named in $1 (default: test;
# several: "bench,peers"). Sourced by scripts/test and scripts/bench, which share the .venv
# (installs are additive). Nothing here relies on packages installed by hand.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
extras="${1:-test}"
venv="${SPECTRA_VENV:-$root/.venv}"
py="${PYTHON:-python3}"
log="$venv/install.log"
pipq() {  # pip, quiet; its log is shown only when it fails
  if ! "$venv/bin/python" -m pip install --quiet "$@" >>"$log" 2>&1; then
    tail -40 "$log" >&2
    echo "spectra: 'pip install $*' failed (log: $log)" >&2
    exit 1
  fi
}
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
  echo "spectra: creating $venv (one-time install of torch and the extras)" >&2
  pipq --upgrade pip
fi
# the compiled helper is rebuilt whenever its source or build script changes
hash="$(cat "$root/pyproject.toml" "$root/scripts/venv.sh" "$root/setup.py" "$root"/spectra/core/_solvers/*.c "$root"/spectra/core/_solvers/*.h "$root"/spectra/core/_solvers/*.cpp | sha1sum | cut -c1-12)"
stamp="$venv/.spectra-$extras-$hash"
covered=0  # the test extra holds every package of these extras: no second install needed
if [ -f "$venv/.spectra-test-$hash" ]; then
  covered=1
  for e in ${extras//,/ }; do
    case "$e" in test|bench|peers|plot|progress|graph|chem) ;; *) covered=0 ;; esac
  done
fi
if [ ! -f "$stamp" ] && [ "$covered" = 0 ]; then
  # torch first, pinned: a CPU build lies on local disk on our machines; an unpinned
  # requirement would pull a multi-GB CUDA build. Any torch >= 2.12 already present is kept.
  if ! "$venv/bin/python" -c "import torch, sys; v=tuple(int(x) for x in torch.__version__.split('+')[0].split('.')[:2]); sys.exit(v < (2, 12))" 2>/dev/null; then
    pipq "torch==${SPECTRA_TORCH_VERSION:-2.13.0}"
  fi
  # without build isolation: the C++ entry compiles against the torch installed here
  # (setup.py); the build tools first, as an isolated build would have fetched them
  pipq "setuptools>=77" wheel
  pipq --no-build-isolation -e "$root[$extras]"
  touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
