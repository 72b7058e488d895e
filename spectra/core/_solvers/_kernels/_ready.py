"""Whether the numba kernels of a dtype can run without compiling, found without numba.

numba compiles a kernel on its first call for a signature and keeps the machine code in
its on-disk cache (``cache=True``): a fresh install's first kernel call waits seconds for
the compilation, a later process only loads the cached code (plus numba's import, ~0.1 s,
and its code generator's start, ~0.25 s, on the 2-core CI machine). The kernel strategies
claim a call only where their code is ready (:mod:`.._strategies._kernels`); this module
says where it is, without importing numba:

- **loaded**: :func:`~._warm.warm_kernels` ran for the dtype in this process;
- **cached**: a *marker* that ``warm_kernels`` wrote next to numba's cache files after every
  kernel of the dtype had been compiled (or loaded) and saved is present and still
  describes this install: the same numba, Python and CPU (numba's cache index is keyed on
  them), the same kernel sources (sha256 of every ``_numba_*.py``), and every index file
  (``.nbi``) it lists still there;
- **cold**: neither (a fresh install, an empty ``NUMBA_CACHE_DIR``, edited kernels).

numba's cache folder is found as numba finds it: ``NUMBA_CACHE_DIR`` if set, else the
``__pycache__`` next to the sources where writable, else numba's user-wide cache folder.

``SPECTRA_KERNELS`` (read when a call is planned; plans are cached, so set it before the
first call) chooses what the planner does with the kernels:

- ``auto`` (the default): kernels where they are ready; a cold dtype runs on LAPACK and
  starts one background compile per process (a detached, lowest-priority ``python -m
  spectra.core._solvers._kernels._warm`` that fills numba's cache for later processes and
  later calls), except where the ``CI`` environment variable is set;
- ``ready``: the same, but nothing is ever started (run ``spectra compile`` yourself);
- ``eager``: kernels wherever they win, compiled inside the call if need be (the first
  releases' behaviour);
- ``lapack``: the kernels never claim a call (``strategy="numba-ql"`` still forces one).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import torch

#: the environment variable that chooses the kernels' mode
ENV = "SPECTRA_KERNELS"
MODES = ("auto", "ready", "eager", "lapack")
#: the dtype groups, each compiled and judged as a whole
GROUPS = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.complex64: "complex64",
    torch.complex128: "complex128",
}
_HERE = Path(__file__).resolve().parent
_MARKER_VERSION = 1


def mode() -> str:
    """The kernels' mode from ``SPECTRA_KERNELS`` (``auto`` when unset); a value that is
    none of :data:`MODES` is an error naming the variable.

    >>> mode() in MODES
    True
    """
    value = os.environ.get(ENV, "").strip().lower() or "auto"
    if value not in MODES:
        raise ValueError(
            f"environment variable {ENV}={os.environ[ENV]!r}: expected one of {', '.join(MODES)}"
        )
    return value


def under_ci() -> bool:
    """Whether the ``CI`` environment variable says this is a CI job (nothing is started)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def cache_dir() -> Path:
    """numba's cache folder for the kernels, found as numba's locators find it."""
    custom = os.environ.get("NUMBA_CACHE_DIR", "")
    sub = f"{_HERE.name}_{hashlib.sha1(str(_HERE).encode()).hexdigest()}"
    if custom:
        return Path(custom) / sub
    tree = _HERE / "__pycache__"
    if os.access(tree if tree.is_dir() else _HERE, os.W_OK):
        return tree
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches" / "numba"
    elif os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home())) / "numba" / "Cache"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "numba"
    return base / sub


@functools.cache
def cpu_key() -> str:
    """What identifies this CPU to numba's cache (its index is keyed on the CPU's name and
    features), read without LLVM: Linux's ``/sys/devices/system/cpu/modalias`` (vendor,
    family, model and the feature bits, ~0.1 ms), else the first processor of
    ``/proc/cpuinfo`` (~10 ms: the kernel samples clock rates for it), else the machine."""
    parts = [platform.machine()]
    parts += [os.environ.get(k, "") for k in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")]
    try:
        with open("/sys/devices/system/cpu/modalias") as fh:
            parts.append(fh.read().strip())
    except OSError:
        try:
            with open("/proc/cpuinfo") as fh:
                for line in fh:
                    if line.startswith(("model name", "flags", "Features", "CPU part")):
                        parts.append(line.strip())
                    if line.strip() == "":
                        break  # the first processor is enough
        except OSError:
            pass
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _python_tag() -> str:
    return f"py{sys.version_info[0]}{sys.version_info[1]}{getattr(sys, 'abiflags', '')}"


def marker_path(name: str) -> Path:
    """The marker ``warm_kernels`` writes for the dtype group ``name`` (one per Python and
    CPU, in numba's folder)."""
    return cache_dir() / f"spectra-kernels-{name}-{_python_tag()}-{cpu_key()}.json"


def lock_path(name: str = "float64") -> Path:
    """The lock a background compile of the group ``name`` holds while it runs (``flock``)."""
    return cache_dir() / f"spectra-kernels-{name}.lock"


def _sources() -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(_HERE.glob("_numba_*.py"))
    }


def _numba_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("numba")
    except PackageNotFoundError:
        return None


def describe() -> dict[str, Any]:
    """What a marker must say to be valid here (without its ``dtypes`` and ``index``)."""
    return {
        "version": _MARKER_VERSION,
        "numba": _numba_version(),
        "python": _python_tag(),
        "cpu": cpu_key(),
        "sources": _sources(),
    }


#: dtype groups whose kernels ``warm_kernels`` compiled or loaded in this process
_LOADED: set[str] = set()
#: verdicts of the on-disk marker per group, until something changes (``changed``)
_ON_DISK: dict[str, bool] = {}
#: called after the kernels' state changed (the strategies bump the registry's version,
#: so no cached plan outlives it)
LISTENERS: list[Callable[[], None]] = []
_LOCK = threading.Lock()


def group(dtype: torch.dtype) -> str:
    return GROUPS[dtype]


def _marker_holds(name: str) -> bool:
    try:
        data = json.loads(marker_path(name).read_text())
        if any(data.get(k) != v for k, v in describe().items()):
            return False
        return all(Path(f).is_file() for f in data["index"])
    except (OSError, ValueError, KeyError, TypeError):
        return False


def state(dtype: torch.dtype) -> str:
    """``"loaded"``, ``"cached"`` or ``"cold"`` for the kernels of ``dtype`` (above).

    >>> state(torch.float64) in ("loaded", "cached", "cold")
    True
    """
    name = group(dtype)
    if name in _LOADED:
        return "loaded"
    with _LOCK:
        if name not in _ON_DISK:
            _ON_DISK[name] = _marker_holds(name)
        return "cached" if _ON_DISK[name] else "cold"


def numba_passes_ready(dtype: torch.dtype) -> bool:
    """Whether the numba passes a LAPACK strategy may take (the one-pass input check and
    gauge of large blocks) run for ``dtype`` without compiling: the kernels' state allows
    it (``eager``: always; ``lapack``: never, no numba at all).

    >>> numba_passes_ready(torch.float64) in (True, False)
    True
    """
    how = mode()
    if how in ("eager", "lapack"):
        return how == "eager"
    return dtype in GROUPS and state(dtype) != "cold"


def changed() -> None:
    """Forget the on-disk verdicts and tell the listeners (after a compile, a fork)."""
    with _LOCK:
        _ON_DISK.clear()
    for listener in LISTENERS:
        listener()


def mark_loaded(names: list[str]) -> None:
    _LOADED.update(names)
    changed()


def write_marker(name: str, index: list[str]) -> Path:
    """Record that the kernels of the group ``name`` are in numba's cache (``index``: the
    index files that hold them)."""
    path = marker_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({**describe(), "dtype": name, "index": sorted(index)}))
    os.replace(tmp, path)  # atomic: a reader sees the old marker or the new one
    _ON_DISK.pop(name, None)
    return path


# ---- the background compile ------------------------------------------------------------

#: this process's background compiles by group: at most one each (a forked child keeps
#: the record and starts none of its own)
_STARTED: dict[str, int] = {}


def background_allowed() -> str | None:
    """Why no background compile may start here, or ``None`` where one may."""
    if mode() != "auto":
        return f"{ENV}={mode()}"
    if under_ci():
        return "not started under CI"
    if os.name != "posix" or getattr(sys, "frozen", False) or not sys.executable:
        return "no background compile on this platform"
    return None


def start_background(name: str) -> int | None:
    """Start the background compile of the group ``name`` (at most once per process) and
    return its pid; ``None`` where none may start (:func:`background_allowed`) or one is
    already running (its lock is held, by this or another process)."""
    if name in _STARTED:
        return _STARTED[name]
    if background_allowed() is not None:
        return None
    with _LOCK:
        if name in _STARTED:
            return _STARTED[name]
        lock = _take_lock(name)
        if lock is None:
            return None
        try:
            proc = _spawn(lock, name)
        except OSError:
            return None
        finally:
            lock.close()  # the child holds the lock now (its inherited descriptor)
        _STARTED[name] = proc.pid
    threading.Thread(
        target=_reap, args=(proc,), name="spectra-kernels-compile", daemon=True
    ).start()
    return proc.pid


def _take_lock(name: str) -> IO[str] | None:
    import fcntl

    try:
        path = lock_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a")  # noqa: SIM115 - handed to the child, closed here after it
    except OSError:
        return None
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()  # another compile holds it
        return None
    return fh


def _spawn(lock: IO[str], name: str) -> subprocess.Popen[bytes]:
    root = str(_HERE.parents[3])  # the folder holding the spectra package: the same code
    env = dict(os.environ)
    env[ENV] = "ready"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    for knob in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[knob] = "1"
    return subprocess.Popen(
        [sys.executable, "-m", "spectra.core._solvers._kernels._warm", "--background", name],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # not in the host's process group: no signals from its tty
        pass_fds=(lock.fileno(),),
        env=env,
        cwd=root,
    )


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """Wait for the background compile (no zombie), then let later calls use its work."""
    proc.wait()
    changed()


def _after_fork_in_child() -> None:
    global _LOCK
    _LOCK = threading.Lock()  # another thread of the parent may have held it at the fork
    _ON_DISK.clear()  # the child judges the disk afresh; its plans are re-made
    for listener in LISTENERS:
        listener()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
