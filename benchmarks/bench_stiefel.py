"""Benchmark: Stiefel retractions and optimizer steps, spectra vs geoopt vs torch's `orthogonal`.

    .venv/bin/python -m benchmarks.bench_stiefel [--quick] [--device cpu|cuda] [--json FILE]

For a batch of 4,096 frames 64 x 8 (float32), in the same run:

- ``retract``: one retraction of the whole batch along a tangent step: spectra's polar
  retraction (one core eigh of the 4,096 Gram matrices 8 x 8; also spectra's QR and Cayley),
  geoopt's ``EuclideanStiefel`` (QR) and ``CanonicalStiefel`` (Cayley with an n x n solve),
  and torch's ``orthogonal`` parametrization (the map from the free weight to the frame,
  Householder for tall matrices, with its n x n ``base``).
- ``step``: one training iteration (linear loss, backward, optimizer step): spectra's
  ``RiemannianSGD``, geoopt's ``RiemannianSGD`` on each manifold, ``torch.optim.SGD`` on the
  parametrized weight.
- ``drift``: ``max |X^T X - I|`` after 1,000 float32 steps with random gradients (lr 0.1),
  on a smaller batch (256 frames) to keep the run short.

``--quick`` (< 60 s) times 1,024 frames instead of 4,096 with fewer repeats, measures the
drift over 200 steps on 16 frames, and runs with one torch thread unless ``--threads`` says
otherwise.

Ratios are ``peer_time / spectra_polar_time`` (> 1: spectra is faster).

``--threads N`` sets torch's intra-op threads for every implementation alike (the core's
own fan-out sets one thread per worker regardless). On a loaded machine torch's OpenMP
threads make tiny batched kernels 100x slower (a 16 x 64 x 8 bmm: 6 ms with 2 threads,
20 us with 1), so compare rows only within one run.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch

from benchmarks._timing import bench_main, median_time
from spectra._bench.domains import Orthogonal

BATCH, N, P = 4096, 64, 8


def _geoopt():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import geoopt
    return geoopt


def _impls(device: str) -> dict[str, dict[str, Callable[..., Any]]]:
    """name -> {"param": x -> parameter-like, "retract": (x, xi) -> y, "opt": params -> opt,
    "frame": param -> current frame}."""
    from spectra.stiefel import RiemannianSGD, Stiefel, StiefelParameter

    geoopt = _geoopt()
    out: dict[str, dict[str, Callable[..., Any]]] = {}
    for method in ("polar", "qr", "cayley"):
        st = Stiefel(method)
        out[f"spectra {method}"] = {
            "retract": st.retract,
            "param": lambda x, st=st: StiefelParameter(x, manifold=st, check=False),
            "opt": lambda ps: RiemannianSGD(ps, lr=0.1),
            "frame": lambda p: p,
        }
    for label, man in (
        ("geoopt EuclideanStiefel", geoopt.EuclideanStiefel()),
        ("geoopt CanonicalStiefel", geoopt.CanonicalStiefel()),
    ):
        out[label] = {
            "retract": man.retr,
            "param": lambda x, man=man: geoopt.ManifoldParameter(x, manifold=man),
            "opt": lambda ps: geoopt.optim.RiemannianSGD(ps, lr=0.1),
            "frame": lambda p: p,
        }

    def ortho_retract(m: Orthogonal, xi: torch.Tensor) -> torch.Tensor:
        return m.weight  # recomputes the frame from the free weight (no caching)

    out["torch orthogonal"] = {
        "retract": ortho_retract,
        "param": lambda x: Orthogonal(x).to(device),
        "opt": lambda ps: torch.optim.SGD(ps, lr=0.1),
        "frame": lambda m: m.weight,
    }
    return out


def _params_of(obj: Any) -> list[torch.Tensor]:
    return list(obj.parameters()) if isinstance(obj, torch.nn.Module) else [obj]


def _rows(quick: bool, device: str) -> list[dict[str, Any]]:
    from spectra.stiefel import Stiefel

    batch = BATCH // 4 if quick else BATCH
    gen = torch.Generator().manual_seed(0)
    x0 = Stiefel().random(batch, N, P, generator=gen).to(device)
    xi = Stiefel().proj(x0, 0.1 * torch.randn(x0.shape, generator=gen).to(device))
    c = torch.randn(x0.shape, generator=gen).to(device)
    repeats, budget = (3, 1.0) if quick else (7, 20.0)
    drift_batch, drift_steps = (16, 200) if quick else (256, 1000)
    impls = _impls(device)
    timings: dict[str, dict[str, float]] = {}
    drifts: dict[str, float] = {}
    for name, impl in impls.items():
        obj = impl["param"](x0.clone())
        arg = obj if name == "torch orthogonal" else x0

        def retract(impl=impl, arg=arg) -> None:
            with torch.no_grad():
                impl["retract"](arg, xi)

        opt = impl["opt"](_params_of(obj))

        def step(impl=impl, obj=obj, opt=opt) -> None:
            opt.zero_grad()
            (impl["frame"](obj) * c).sum().backward()
            opt.step()

        timings[name] = {
            "retract": median_time(retract, repeats=repeats, device=device, budget_s=budget),
            "step": median_time(step, repeats=repeats, device=device, budget_s=budget),
        }
        drifts[name] = _drift(impl, x0[:drift_batch], device, drift_steps)
        print(
            f"  {name}: retract {timings[name]['retract']:.4f} s, step "
            f"{timings[name]['step']:.4f} s, drift {drifts[name]:.2e}",
            flush=True,
        )
    rows = []
    base = timings["spectra polar"]
    for what in ("retract", "step"):
        for name, t in timings.items():
            rows.append(
                {
                    "name": what,
                    "implementation": name,
                    "batch": batch,
                    "n": N,
                    "p": P,
                    "dtype": "float32",
                    "device": device,
                    "median_s": t[what],
                    "spectra_polar_s": base[what],
                    "ratio_peer_over_spectra": t[what] / base[what],
                }
            )
    for name, d in drifts.items():
        rows.append(
            {
                "name": f"drift after {drift_steps} steps",
                "implementation": name,
                "batch": drift_batch,
                "n": N,
                "p": P,
                "dtype": "float32",
                "device": device,
                "orthogonality_error": d,
            }
        )
    return rows


def _drift(
    impl: dict[str, Callable[..., Any]], x0: torch.Tensor, device: str, steps: int = 1000
) -> float:
    gen = torch.Generator(device=device).manual_seed(1)
    obj = impl["param"](x0.clone())
    opt = impl["opt"](_params_of(obj))
    for _ in range(steps):
        c = torch.randn(x0.shape, generator=gen, device=device)
        opt.zero_grad()
        (impl["frame"](obj) * c).sum().backward()
        opt.step()
    with torch.no_grad():
        x = impl["frame"](obj)
        eye = torch.eye(x.shape[-1], device=device)
        return float((x.mT @ x - eye).abs().max())


def run(
    quick: bool = False, device: str = "cpu", threads: int | None = None
) -> list[dict[str, Any]]:
    """Time every implementation; one dict per (measure, implementation)."""
    old = torch.get_num_threads()
    if threads is None and quick:
        threads = 1  # keeps --quick under a minute on a loaded machine (see the module doc)
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        rows = _rows(quick, device)
    finally:
        torch.set_num_threads(old)
    for r in rows:
        r["threads"] = threads or old
    return rows


def _print(rows: list[dict[str, Any]]) -> None:
    head = f"{'measure':24} {'implementation':26} {'median s':>10} {'ratio':>8}"
    print(head)
    print("-" * len(head))
    for r in rows:
        if "median_s" in r:
            print(
                f"{r['name']:24} {r['implementation']:26} {r['median_s']:10.4f} "
                f"{r['ratio_peer_over_spectra']:7.2f}x"
            )
        else:
            print(f"{r['name']:24} {r['implementation']:26} {r['orthogonality_error']:10.2e}")


def _print_with_header(rows: list[dict[str, Any]]) -> None:
    print(
        f"Stiefel: {rows[0]['batch']} frames {N} x {P}, float32, device {rows[0]['device']}, "
        f"torch threads {rows[0]['threads']}"
    )
    _print(rows)


def main(argv: list[str] | None = None) -> None:
    bench_main(__doc__, run, _print_with_header, argv, threads=True)


if __name__ == "__main__":
    main()
