"""Bad input gets a clear error naming what is wrong and where."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spectra

from .helpers import patch_torch_strategy


def test_non_square_and_mismatched_shapes():
    with pytest.raises(ValueError, match=r"shape \(\.\.\., n, n\).*\(3, 4\)"):
        spectra.eigh(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="shape"):
        spectra.eigh(np.zeros(5))
    with pytest.raises(ValueError, match="same matrix size"):
        spectra.eigh(np.eye(3), np.eye(4))
    with pytest.raises(ValueError, match="do not broadcast"):
        spectra.eigh(np.stack([np.eye(3)] * 2), np.stack([np.eye(3)] * 3))


def test_nan_and_inf_name_the_batch_indices():
    a = np.stack([np.eye(3)] * 6).reshape(2, 3, 3, 3)
    a[1, 2, 0, 0] = np.nan
    a[0, 1, 2, 1] = a[0, 1, 1, 2] = np.inf
    with pytest.raises(ValueError, match=r"NaN or Inf.*\[\(0, 1\), \(1, 2\)\]"):
        spectra.eigh(a)
    b = np.stack([np.eye(3)] * 6).reshape(2, 3, 3, 3)
    b[0, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match=r"^b contains NaN"):
        spectra.eigh(np.eye(3), b)


def test_non_symmetric_beyond_tolerance_names_indices():
    a = torch.eye(4, dtype=torch.float64).repeat(3, 1, 1)
    a[2, 0, 1] = 0.5
    with pytest.raises(ValueError, match=r"not symmetric.*\[2\]"):
        spectra.eigh(a)
    a[2, 0, 1] = 1e-12  # round-off level asymmetry passes
    spectra.eigh(a)
    c = torch.eye(2, dtype=torch.complex128)
    c[0, 1] = 1j
    c[1, 0] = 1j  # symmetric but not Hermitian
    with pytest.raises(ValueError, match="not Hermitian"):
        spectra.eigh(c)
    a[2, 0, 1] = 0.5
    spectra.eigh(a, check=False)  # the caller's choice: lower triangle used


def test_bad_k_dtype_and_type():
    with pytest.raises(ValueError, match=r"k must be an integer in \[0, n=3\]"):
        spectra.eigh(np.eye(3), k=4)
    with pytest.raises(ValueError, match="k must be"):
        spectra.eigh(np.eye(3), k=-1)
    with pytest.raises(TypeError, match=r"expected a torch\.Tensor or numpy\.ndarray"):
        spectra.eigh("not a matrix")
    with pytest.raises(ValueError, match="unknown strategy"):
        spectra.eigh(np.eye(3), strategy="magic")


def test_symmetric_inf_alone_is_still_named():
    a = np.stack([np.eye(3)] * 8)
    a[5, 0, 0] = np.inf
    with pytest.raises(ValueError, match=r"NaN or Inf.*\[5\]"):
        spectra.eigh(a, workers=2)
    with pytest.raises(ValueError, match=r"NaN or Inf.*\[5\]"):
        spectra.eigvalsh(a, workers=2)


def test_bad_matrices_in_different_worker_parts_are_all_named():
    assert spectra.plan(32, 256, torch.float64, "cpu", workers=2).workers > 1  # 2 parts
    a = np.stack([np.eye(32)] * 256)
    a[1, 0, 2] = 0.5
    a[255, 1, 0] = 0.5
    with pytest.raises(ValueError, match=r"not symmetric.*\[1, 255\]"):
        spectra.eigh(a, workers=2)


# ---- errors as data, validated options (issue 16 / 11) ------------------------------------


def test_errors_carry_what_and_indices():
    a = np.stack([np.eye(3)] * 4)
    a[2, 0, 0] = np.nan
    with pytest.raises(spectra.InputError) as err:
        spectra.eigh(a)
    assert err.value.what == "a" and err.value.indices == [(2,)]
    b = np.stack([np.eye(3)] * 4)
    b[3] = -b[3]
    with pytest.raises(spectra.LinAlgError) as err:
        spectra.eigh(np.eye(3), b)
    assert err.value.what == "b" and err.value.indices == [(3,)]


def test_ragged_generalized_names_the_list_index_of_a_bad_b():
    bad = -np.eye(3)
    a = [np.eye(2), np.eye(3), np.eye(3), np.eye(3)]
    b = [np.eye(2), np.eye(3), np.eye(3), bad]  # b[3] is the 3rd of its size group
    with pytest.raises(spectra.LinAlgError, match=r"^b\[3\] is not positive definite") as err:
        spectra.eigh(a, b)
    assert err.value.what == "b[3]"
    b[1] = bad
    with pytest.raises(spectra.LinAlgError, match=r"b is not positive definite.*\[1, 3\]") as err:
        spectra.eigvalsh(a, b)
    assert err.value.indices == [(1,), (3,)]


def test_ragged_members_near_the_float_range_are_solved_or_named():
    big = np.diag([1e307, 1.5e308, 3e307])
    big[0, 1] = big[1, 0] = 1e307
    small = np.diag([1.7e308, 1e307])  # padding it next to `big` overflows the shift
    w = spectra.eigvalsh([big, small], strategy="torch")
    np.testing.assert_allclose(w[0], np.linalg.eigvalsh(big), rtol=1e-12)
    np.testing.assert_allclose(w[1], [1e307, 1.7e308], rtol=1e-12)


def test_raw_torch_linalg_errors_become_spectra_errors(monkeypatch):
    def fails(a, vectors):
        raise torch.linalg.LinAlgError("linalg.eigh: The algorithm failed to converge")

    patch_torch_strategy(monkeypatch, fails)
    with pytest.raises(spectra.LinAlgError, match="could not be decomposed"):
        spectra.eigh(torch.eye(3, dtype=torch.float64), strategy="torch", workers=1)
    with pytest.raises(spectra.LinAlgError, match=r"could not be decomposed.*indices \[0, 1\]"):
        spectra.eigvalsh([torch.eye(3), torch.eye(2)], strategy="torch", workers=1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"workers": 0}, "workers must be an integer >= 1, got 0"),
        ({"workers": 1.5}, "workers must be an integer >= 1, got 1.5"),
        ({"workers": True}, "workers must be an integer"),
        ({"chunk_size": -2}, "chunk_size must be an integer >= 1"),
        ({"chunk_size": "4"}, "chunk_size must be an integer"),
        ({"max_memory": 0}, "max_memory must be a finite number of bytes > 0"),
        ({"max_memory": float("inf")}, "max_memory must be a finite"),
        ({"symmetry_tol": -1e-3}, "symmetry_tol must be a finite number >= 0"),
        ({"symmetry_tol": float("nan")}, "symmetry_tol must be a finite number >= 0"),
        ({"degenerate_tol": float("inf")}, "degenerate_tol must be a finite number >= 0"),
        ({"broadening": -1.0}, "broadening must be a finite number >= 0"),
        ({"degenerate": "loud"}, "degenerate must be one of"),
    ],
)
def test_options_are_validated_with_clear_errors(kwargs, message):
    with pytest.raises(spectra.InputError, match=message):
        spectra.eigh(np.eye(3), **kwargs)


@pytest.mark.parametrize("lindep", [-1.0, float("nan"), float("inf")])
def test_lindep_must_be_finite_and_not_negative(lindep):
    with pytest.raises(spectra.InputError, match="lindep must be a finite number >= 0"):
        spectra.eigh(np.eye(2), np.eye(2), lindep=lindep)


def test_numpy_and_torch_integers_for_counts_and_k():
    a = np.diag([3.0, 1.0, 2.0])
    for k in (np.int64(2), np.int32(2), torch.tensor(2), 2):
        np.testing.assert_array_equal(spectra.eigvalsh(a, k=k, largest=True), [2.0, 3.0])
    w = spectra.eigvalsh(a, workers=np.int64(1), chunk_size=torch.tensor(1))
    np.testing.assert_array_equal(w, [1.0, 2.0, 3.0])
    for bad in (True, 1.0, np.float64(2.0), torch.tensor(2.0), "2"):
        with pytest.raises(spectra.InputError, match=r"k must be an integer in \[0, n=3\]"):
            spectra.eigvalsh(a, k=bad)


def test_a_budget_below_one_matrix_warns_and_still_solves():
    a = np.stack([np.diag([2.0, 1.0, 3.0])] * 3)
    with pytest.warns(ResourceWarning, match="below the working set of one 3x3 matrix"):
        w = spectra.eigvalsh(a, max_memory=17)
    np.testing.assert_array_equal(w, [[1.0, 2.0, 3.0]] * 3)
