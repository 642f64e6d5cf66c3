"""scikit-learn estimators on gputensor arrays through its Array API dispatch
(``array_api_dispatch=True``; scipy's own dispatch is switched on in ``conftest.py``), against
the same estimators on NumPy arrays: PCA (``svd_solver='full'``, ``'covariance_eigh'``),
Ridge (``solver='svd'``) and LinearDiscriminantAnalysis (``solver='svd'``). They run on
``gputensor.linalg``'s svd and eigh. Small data, to stay fast on a software adapter.
"""

from __future__ import annotations

import numpy as np
import pytest

import sklearn  # pinned in the test extra
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import Ridge

import gputensor as gt

from _compare import tol

TOL = {n: tol(n, "estimator")["rtol"] for n in ("float32", "float64")}


def _data(dtype: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 6)) * np.array([3.0, 2.0, 1.0, 0.5, 0.2, 0.1])
    y = x @ rng.standard_normal(6) + 0.1 * rng.standard_normal(40)
    labels = (x[:, 0] + x[:, 1] > 0).astype(np.int64) + (x[:, 2] > 0.5)
    return x.astype(dtype), y.astype(dtype), labels


def _host(a: object) -> np.ndarray:
    return gt.asnumpy(a) if isinstance(a, gt.GpuArray) else np.asarray(a)


def _fit_both(make, *args):
    ref = make().fit(*args)
    with sklearn.config_context(array_api_dispatch=True):
        est = make().fit(*[gt.asarray(a) for a in args])
    return ref, est


@pytest.mark.parametrize("dtype", ("float32", "float64"))
@pytest.mark.parametrize("solver", ("full", "covariance_eigh"))
def test_pca(dtype: str, solver: str) -> None:
    x, _, _ = _data(dtype)
    ref, est = _fit_both(lambda: PCA(n_components=3, svd_solver=solver), x)
    assert isinstance(est.components_, gt.GpuArray)
    tol = TOL[dtype]
    np.testing.assert_allclose(_host(est.explained_variance_), ref.explained_variance_, rtol=tol)
    # components are defined up to sign; sklearn flips them deterministically (svd_flip)
    np.testing.assert_allclose(np.abs(_host(est.components_)), np.abs(ref.components_), rtol=tol, atol=tol)
    with sklearn.config_context(array_api_dispatch=True):
        z = _host(est.transform(gt.asarray(x)))
    np.testing.assert_allclose(np.abs(z), np.abs(ref.transform(x)), rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_ridge_svd(dtype: str) -> None:
    x, y, _ = _data(dtype)
    ref, est = _fit_both(lambda: Ridge(alpha=1.0, solver="svd"), x, y)
    tol = TOL[dtype]
    np.testing.assert_allclose(_host(est.coef_), ref.coef_, rtol=tol, atol=tol)
    with sklearn.config_context(array_api_dispatch=True):
        pred = _host(est.predict(gt.asarray(x)))
    np.testing.assert_allclose(pred, ref.predict(x), rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_lda_svd(dtype: str) -> None:
    x, _, labels = _data(dtype)
    ref, est = _fit_both(lambda: LinearDiscriminantAnalysis(solver="svd"), x, labels)
    tol = TOL[dtype]
    np.testing.assert_allclose(_host(est.coef_), ref.coef_, rtol=tol * 10, atol=tol * 10)
    with sklearn.config_context(array_api_dispatch=True):
        pred = _host(est.predict(gt.asarray(x)))
        proba = _host(est.predict_proba(gt.asarray(x)))
    np.testing.assert_array_equal(pred, ref.predict(x))
    np.testing.assert_allclose(proba, ref.predict_proba(x), rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("name", ("RidgeCV", "RidgeClassifier", "Nystroem", "GaussianMixture", "Pipeline"))
def test_more_estimators(name: str) -> None:
    """More of the estimators that need gputensor.linalg (eigh, svd, cholesky, ...), float64."""
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import RidgeClassifier, RidgeCV
    from sklearn.mixture import GaussianMixture
    from sklearn.pipeline import make_pipeline

    x, y, labels = _data("float64")
    runs = {
        "RidgeCV": lambda x, y, c: RidgeCV().fit(x, y).predict(x),
        "RidgeClassifier": lambda x, y, c: RidgeClassifier(solver="svd").fit(x, c).predict(x),
        "Nystroem": lambda x, y, c: Nystroem(n_components=10, random_state=0).fit(x).transform(x),
        "GaussianMixture": lambda x, y, c: GaussianMixture(2, covariance_type="full", init_params="random_from_data",
                                                           random_state=0).fit(x).means_,
        "Pipeline": lambda x, y, c: make_pipeline(PCA(n_components=3), RidgeCV()).fit(x, y).predict(x),
    }
    ref = runs[name](x, y, labels)
    with sklearn.config_context(array_api_dispatch=True):
        out = _host(runs[name](gt.asarray(x), gt.asarray(y), gt.asarray(labels)))
    np.testing.assert_allclose(out, ref, **tol("float64", "estimator_metric"))
