"""Saving a fitted BatchPCA with torch.save and loading it with torch.load's default
weights_only=True (issue 24): results after the round trip equal the original's bitwise."""

from __future__ import annotations

import io
import pathlib

import numpy as np
import pytest
import torch

from spectra.core.domain import InputError
from spectra.pca import BatchPCA, NotFittedError


def _round_trip(model):
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    state = torch.load(buf, weights_only=True)  # torch's default since 2.6, stated
    return BatchPCA().load_state_dict(state)


def _same(a, b):
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.device == b.device
        assert torch.equal(a, b)
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    else:
        assert type(a) is type(b)
        np.testing.assert_array_equal(a, b)
        assert getattr(a, "dtype", None) == getattr(b, "dtype", None)


ATTRS = (
    "mean_",
    "components_",
    "explained_variance_",
    "explained_variance_ratio_",
    "singular_values_",
    "noise_variance_",
    "n_components_",
    "n_samples_",
    "components_mask_",
    "n_features_in_",
)


def _check(model, x):
    back = _round_trip(model)
    assert back.get_params() == model.get_params()
    assert back.plan_ == model.plan_
    for name in ATTRS:
        _same(getattr(model, name), getattr(back, name))
    for method in ("transform", "score_samples", "score"):
        _same(getattr(model, method)(x), getattr(back, method)(x))
    _same(model.get_precision(), back.get_precision())
    _same(model.inverse_transform(model.transform(x)), back.inverse_transform(back.transform(x)))
    return back


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_round_trip_is_bitwise(dtype, kind):
    x = np.random.default_rng(0).normal(size=(5, 40, 6)).astype(dtype)
    data = torch.from_numpy(x) if kind == "torch" else x
    _check(BatchPCA(0.8, whiten=True, workers=1).fit(data), data)


def test_round_trip_of_one_dataset_ragged_and_randomized():
    rng = np.random.default_rng(1)
    one = rng.normal(size=(50, 7))
    back = _check(BatchPCA("mle").fit(one), one)
    assert isinstance(back.score(one), float) and back.components_.ndim == 2
    xs = [rng.normal(size=(n, 5)) for n in (9, 30, 14)]
    _check(BatchPCA(2).fit(xs), xs)
    wide = rng.normal(size=(2, 60, 200))
    model = BatchPCA(3, svd_solver="randomized", random_state=4).fit(wide)
    assert _check(model, wide).plan_.route == "randomized"


def test_round_trip_through_a_file(tmp_path: pathlib.Path):
    x = np.random.default_rng(2).normal(size=(3, 30, 4))
    model = BatchPCA(2).fit(x)
    torch.save(model.state_dict(), tmp_path / "pca.pt")
    back = BatchPCA().load_state_dict(torch.load(tmp_path / "pca.pt"))
    np.testing.assert_array_equal(back.transform(x), model.transform(x))


def test_bad_states_are_refused():
    with pytest.raises(NotFittedError):
        BatchPCA(2).state_dict()
    with pytest.raises(InputError, match="not a BatchPCA state"):
        BatchPCA().load_state_dict({"format": "something else"})
    state = BatchPCA(2).fit(np.ones((2, 5, 3)) + np.arange(3)).state_dict()
    del state["fit"]["components"]
    with pytest.raises(InputError, match=r"lacks the fitted tensors \['components'\]"):
        BatchPCA().load_state_dict(state)


def test_no_bare_value_error_in_the_pca_package():
    import spectra.pca

    root = pathlib.Path(spectra.pca.__file__).parent
    offenders = [
        f"{path.name}:{i}"
        for path in sorted(root.glob("*.py"))
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if "raise ValueError" in line
    ]
    assert offenders == []  # bad input raises InputError (a ValueError) naming what and where
