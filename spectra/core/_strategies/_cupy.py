"""The ``cupy-syevj`` strategy: CuPy's batched Jacobi (``syevjBatched``) through DLPack,
zero copy on the GPU. On a torch whose CUDA ``eigh`` loops ``syevd`` for n > 32 (before
2.12) it claims those sizes when autotuning is off: it stays batched."""

from __future__ import annotations

import torch

from .._support._versions import LEGACY_CUDA_BATCHED_MAX_N, cuda_batched_everywhere
from ._base import Claim, PrefersFn, Result, Runs, Strategy, register


def cupy_available() -> bool:
    try:
        import cupy  # noqa: F401
    except Exception:
        return False
    return torch.cuda.is_available()


def cupy_syevj(a: torch.Tensor, vectors: bool) -> Result:
    import cupy

    with cupy.cuda.ExternalStream(torch.cuda.current_stream(a.device).cuda_stream):
        arr = cupy.from_dlpack(a.detach().contiguous())
        if vectors:
            w, v = cupy.linalg.eigh(arr)
            return torch.from_dlpack(w), torch.from_dlpack(v)
        return torch.from_dlpack(cupy.linalg.eigvalsh(arr)), None


def legacy_cuda_claim(what: str, rank: int) -> PrefersFn:
    """A ``prefers`` for batched CUDA solvers where torch loops ``syevd`` (n > 32 before
    torch 2.12)."""

    def prefers(n: int, dtype: torch.dtype, device: torch.device, vectors: bool) -> Claim | None:
        if device.type != "cuda" or n <= LEGACY_CUDA_BATCHED_MAX_N or cuda_batched_everywhere():
            return None
        why = f"torch {torch.__version__} loops syevd for n > 32 on CUDA; {what} stays batched"
        return Claim(why, rank=rank)

    return prefers


register(
    Strategy(
        "cupy-syevj",
        ("cuda",),
        cupy_syevj,
        "CuPy batched syevj through DLPack",
        runs=Runs(available=cupy_available, prefers=legacy_cuda_claim("CuPy's batched syevj", 1)),
    )
)
