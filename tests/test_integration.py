"""BongRegressor / BongClassifier inside scikit-learn's meta-estimators, StreamingPipeline,
and the compile-once guarantees.

* GridSearchCV (over prior_variance, and over family and rule) on
  Pipeline(StandardScaler(), BongClassifier()) with ``scoring="neg_log_loss"``,
  cross_validate, CalibratedClassifierCV and TransformedTargetRegressor run and return
  estimators that are exactly (``np.array_equal``) what fitting by hand gives: the same
  floating-point operations on the same inputs.
* GridSearchCV with ``n_jobs=2`` (loky worker processes) gives the same scores and the
  same refitted estimator as ``n_jobs=1``; the workers run the same XLA programs on the
  same inputs, so the scores agree to float64 rounding (we allow 1e-12 relative).
* StreamingPipeline.partial_fit equals doing ``scaler.partial_fit``, ``transform`` and
  ``clf.partial_fit`` by hand, and fit / predict / score equal sklearn's Pipeline (exact).
* Compile once: hyperparameters are traced, so a grid of 6 prior variances × 3 folds
  compiles no more ``run_stream`` / ``predict_log_proba`` programs than a grid of 2
  (measured on fresh input widths so that nothing is cached before); streaming batches
  of 1 to 1000 rows compiles at most ``len(CHUNK_SIZES)`` ``run_stream`` programs per
  configuration and input width.
"""

from functools import partial

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import TransformedTargetRegressor
from sklearn.decomposition import PCA
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_validate
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from skbong import (
    BongClassifier,
    BongPoissonRegressor,
    BongRegressor,
    StreamingPipeline,
    make_streaming_pipeline,
)
from skbong import engine as E

N, D = 48, 3
RNG = np.random.default_rng(42)
X = RNG.normal(size=(N, D)) * [1.0, 10.0, 0.1] + [0.0, 5.0, -1.0]
Y_BIN = (X[:, 0] + 0.1 * (X[:, 1] - 5) - 5 * (X[:, 2] + 1) + RNG.normal(size=N) > 0).astype(int)
Y_REG = np.exp(0.3 * X[:, 0] + 0.05 * X[:, 1] + 0.1 * RNG.normal(size=N))
CV = StratifiedKFold(3, shuffle=True, random_state=0)
CLF = dict(family="full", dtype="float64", random_state=0)


def _pipe(**kw):
    return make_pipeline(StandardScaler(), BongClassifier(**{**CLF, **kw}))


def _assert_same_model(a, b, X):
    assert_array_equal(a.predict_proba(X), b.predict_proba(X))


# ------------------------------------------------------------------ model selection
def test_grid_search_prior_variance():
    gs = GridSearchCV(
        _pipe(),
        {"bongclassifier__prior_variance": [0.1, 1.0, 10.0]},
        cv=CV,
        scoring="neg_log_loss",
    ).fit(X, Y_BIN)
    scores = gs.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and np.all(scores < 0)
    assert gs.best_params_["bongclassifier__prior_variance"] in (0.1, 1.0, 10.0)
    best = _pipe(prior_variance=gs.best_params_["bongclassifier__prior_variance"]).fit(X, Y_BIN)
    _assert_same_model(gs.best_estimator_, best, X)
    assert gs.best_estimator_[-1].n_observations_ == N


def test_grid_search_family_and_rule():
    grid = {
        "bongclassifier__family": ["full", "diag"],
        "bongclassifier__rule": ["bong", "bog"],
    }
    gs = GridSearchCV(_pipe(learning_rate=0.5), grid, cv=CV, scoring="neg_log_loss")
    gs.fit(X, Y_BIN)
    assert np.all(np.isfinite(gs.cv_results_["mean_test_score"]))
    best = _pipe(learning_rate=0.5, **{k.split("__")[1]: v for k, v in gs.best_params_.items()})
    _assert_same_model(gs.best_estimator_, best.fit(X, Y_BIN), X)


def test_grid_search_n_jobs_2():
    grid = {"bongclassifier__prior_variance": [0.3, 3.0]}
    one = GridSearchCV(_pipe(), grid, cv=CV, scoring="neg_log_loss").fit(X, Y_BIN)
    two = GridSearchCV(_pipe(), grid, cv=CV, scoring="neg_log_loss", n_jobs=2).fit(X, Y_BIN)
    for key in ("mean_test_score", "split0_test_score", "split2_test_score"):
        assert_allclose(two.cv_results_[key], one.cv_results_[key], rtol=1e-12)
    assert two.best_params_ == one.best_params_
    _assert_same_model(two.best_estimator_, one.best_estimator_, X)
    assert two.best_estimator_[-1].n_observations_ == N


def test_cross_validate():
    res = cross_validate(
        _pipe(), X, Y_BIN, cv=CV, scoring=["neg_log_loss", "accuracy"], return_estimator=True
    )
    assert np.all(np.isfinite(res["test_neg_log_loss"]))
    assert np.all(res["test_accuracy"] > 0.5)
    for (train, _), est in zip(CV.split(X, Y_BIN), res["estimator"]):
        assert est[-1].n_observations_ == len(train)
        _assert_same_model(est, _pipe().fit(X[train], Y_BIN[train]), X)


@pytest.mark.parametrize("method", ["sigmoid", "isotonic"])
def test_calibrated_classifier(method):
    cal = CalibratedClassifierCV(_pipe(), cv=CV, method=method).fit(X, Y_BIN)
    proba = cal.predict_proba(X)
    assert proba.shape == (N, 2)
    assert_allclose(proba.sum(1), 1.0, rtol=1e-12)
    assert_array_equal(cal.classes_, [0, 1])
    for (train, _), cc in zip(CV.split(X, Y_BIN), cal.calibrated_classifiers_):
        assert cc.estimator[-1].n_observations_ == len(train)


def test_transformed_target_regressor():
    reg = BongRegressor(family="full", dtype="float64", obs_variance=0.1, random_state=0)
    ttr = TransformedTargetRegressor(regressor=reg, func=np.log, inverse_func=np.exp)
    ttr.fit(X, Y_REG)
    manual = clone(reg).fit(X, np.log(Y_REG))
    assert_array_equal(ttr.predict(X), np.exp(manual.predict(X)))
    assert_array_equal(ttr.regressor_.posterior_mean_, manual.posterior_mean_)
    scaled = TransformedTargetRegressor(regressor=reg, transformer=StandardScaler()).fit(X, Y_REG)
    assert scaled.predict(X).shape == (N,)
    assert scaled.score(X, Y_REG) > 0.5


# ------------------------------------------------------------------ StreamingPipeline
def test_streaming_pipeline_partial_fit_equals_manual():
    pipe = make_streaming_pipeline(StandardScaler(), BongClassifier(**CLF))
    assert isinstance(pipe, StreamingPipeline)
    assert [name for name, _ in pipe.steps] == ["standardscaler", "bongclassifier"]
    scaler, clf = StandardScaler(), BongClassifier(**CLF)
    w = np.linspace(0.5, 1.5, N)
    for i, rows in enumerate(np.array_split(np.arange(N), [5, 6, 30])):
        kw = {"classes": [0, 1]} if i == 0 else {}
        pipe.partial_fit(X[rows], Y_BIN[rows], sample_weight=w[rows], **kw)
        scaler.partial_fit(X[rows])
        clf.partial_fit(scaler.transform(X[rows]), Y_BIN[rows], sample_weight=w[rows], **kw)
    assert_array_equal(pipe[0].mean_, scaler.mean_)
    assert_array_equal(pipe[-1].posterior_mean_, clf.posterior_mean_)
    assert_array_equal(pipe[-1].posterior_var_, clf.posterior_var_)
    assert_array_equal(pipe.predict_proba(X), clf.predict_proba(scaler.transform(X)))


def test_streaming_pipeline_behaves_as_pipeline():
    steps = lambda: [("scale", StandardScaler()), ("clf", BongClassifier(**CLF))]  # noqa: E731
    sp, p = StreamingPipeline(steps()).fit(X, Y_BIN), Pipeline(steps()).fit(X, Y_BIN)
    assert_array_equal(sp.predict(X), p.predict(X))
    assert_array_equal(sp.predict_proba(X), p.predict_proba(X))
    assert sp.score(X, Y_BIN) == p.score(X, Y_BIN)
    assert_array_equal(sp[-1].posterior_mean_, p[-1].posterior_mean_)
    assert sp.get_params()["clf__prior_variance"] == "auto"
    # a final step without partial_fit: no partial_fit on the pipeline either
    assert not hasattr(
        StreamingPipeline([("s", StandardScaler()), ("lr", LinearRegression())]), "partial_fit"
    )


def test_streaming_pipeline_non_streaming_steps():
    pipe = StreamingPipeline([("pca", PCA(2)), ("clf", BongClassifier(**CLF))])
    with pytest.raises(ValueError, match="'pca'.*no partial_fit and is not fitted"):
        pipe.partial_fit(X, Y_BIN, classes=[0, 1])
    pca = PCA(2).fit(X)
    pipe = StreamingPipeline(
        [("pca", pca), ("skip", "passthrough"), ("clf", BongClassifier(**CLF))]
    )
    pipe.partial_fit(X[:20], Y_BIN[:20], classes=[0, 1]).partial_fit(X[20:], Y_BIN[20:])
    Z = pca.transform(X)  # the same two calls by hand (the first one's statistics)
    manual = BongClassifier(**CLF).partial_fit(Z[:20], Y_BIN[:20], classes=[0, 1])
    manual.partial_fit(Z[20:], Y_BIN[20:])
    assert_array_equal(pipe[-1].posterior_mean_, manual.posterior_mean_)


# ------------------------------------------------------------------ compile once
def _grid_compiles(n_values, width):
    """Programs compiled by a 3-fold grid over n_values prior variances on fresh width."""
    rng = np.random.default_rng(width)
    Xw = rng.normal(size=(N, width))
    yw = (Xw[:, 0] + rng.normal(size=N) > 0).astype(int)
    before = E.run_stream_checked._cache_size(), E.predict_log_proba._cache_size()
    grid = {"bongclassifier__prior_variance": list(np.geomspace(0.1, 10.0, n_values))}
    GridSearchCV(_pipe(family="diag"), grid, cv=CV, scoring="neg_log_loss").fit(Xw, yw)
    return E.run_stream_checked._cache_size() - before[0], E.predict_log_proba._cache_size() - before[1]


def test_grid_search_compiles_once():
    stream2, proba2 = _grid_compiles(2, width=5)
    stream6, proba6 = _grid_compiles(6, width=6)
    assert stream2 >= 1 and proba2 >= 1  # the counters see the fresh width
    assert stream6 <= stream2
    assert proba6 <= proba2


def test_float32_predictions_do_not_depend_on_the_rows_beside_them(compiles):
    """A float32 model predicts every call of up to 128 rows in one program (its 128-row
    block), so a row's prediction is the same alone as in a batch, bitwise.
    XLA:CPU's float32 kernels round a row differently in blocks of other sizes: on stop
    38's CPU the 8- against the 128-row block by ~1e-6 relative, which failed
    scikit-learn's subset-invariance check for the (dlr, float32) Poisson regressor. The
    program count fails the split on any machine; the equality where the rounding
    differs."""
    width = 9  # used nowhere else: every program for it is new
    rng = np.random.default_rng(9)
    X = rng.normal(size=(40, width))
    y = rng.poisson(np.exp(0.3 * X[:, 0]))
    est = BongPoissonRegressor(family="dlr", prior_variance=1.0, random_state=0).fit(X, y)
    assert est.posterior_mean_.dtype == np.float32 and est.family_ == "dlr"
    batch = est.predict(X[:20])
    alone = np.concatenate([est.predict(X[i : i + 1]) for i in range(20)])
    assert_array_equal(alone, batch)
    assert compiles["jit(predict_moments)"] == 1


def _spy(monkeypatch, owner, name):
    """Record the number of rows of every block that the engine program ``owner.name`` gets."""
    real, rows = getattr(owner, name), []

    def spy(*args, **kwargs):
        rows.append(next(a for a in args if isinstance(a, np.ndarray) and a.ndim == 2).shape[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return rows


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linearised_predictions_of_a_large_belief_run_in_small_blocks(monkeypatch, dtype):
    """The linearised moments form a C × P Jacobian for every row of a block, padding rows
    included. With the block bound set to 10 P (here P = 21), a one-row float32
    ``predict`` with the standard deviation runs an 8-row block, not 128 (float64 its
    1-row block), a 20-row call three 8-row blocks (not one of 1,024), and a row's
    prediction is the same alone as in the batch (float32 bitwise, float64 to 1e-13 as
    its blocks differ); below 8 P the blocks hold one row, and with the input gradients
    (1 + D Jacobians per row) too. The plug-in mean, which forms no Jacobian, keeps its
    blocks (128 rows in float32, one in float64)."""
    import skbong._core.posterior as posterior

    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(30, 3)), rng.normal(size=30)
    est = BongRegressor(hidden_layer_sizes=(4,), dtype=dtype, random_state=0).fit(X, y)
    p = est.posterior_mean_.shape[0]
    assert p == 21
    rows = _spy(monkeypatch, E, "predict_moments")
    monkeypatch.setattr(posterior, "_BLOCK_ELEMENTS", 10 * p)
    alone = [est.predict(X[i : i + 1], return_std=True) for i in range(20)]
    assert rows == [8 if dtype == "float32" else 1] * 20  # float64 keeps its 1-row block
    rows.clear()
    batch = est.predict(X[:20], return_std=True)
    assert rows == [8, 8, 8]
    same = assert_array_equal if dtype == "float32" else partial(assert_allclose, rtol=1e-13)
    for i, (mean, std) in enumerate(alone):
        same(mean, batch[0][i : i + 1])
        same(std, batch[1][i : i + 1])
    rows.clear()
    est.predict(X[:1])
    assert rows == [128 if dtype == "float32" else 1]
    rows.clear()
    monkeypatch.setattr(posterior, "_BLOCK_ELEMENTS", 7 * p)
    est.predict(X[:3], return_std=True)
    assert rows == [1, 1, 1]
    grads = _spy(monkeypatch, E.predictive, "predict_moments_grad")
    monkeypatch.setattr(posterior, "_BLOCK_ELEMENTS", 10 * p)  # 8 rows, but not 8 (1 + D)
    est.predict(X[:1], return_std=True, return_std_grad=True)
    assert grads == [1]


def test_poisson_linearised_predictions_run_in_small_blocks(monkeypatch):
    """The Poisson regressor's linearised predictives (its moments, and the output moments
    of ``predict_logpmf``) are bounded like the Gaussian one's: 8-row blocks under a
    bound of 10 P, not 128."""
    import skbong._core.posterior as posterior

    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 3))
    est = BongPoissonRegressor(prior_variance=1.0, random_state=0).fit(X, rng.poisson(np.exp(0.3 * X[:, 0])))
    assert est.posterior_mean_.dtype == np.float32
    monkeypatch.setattr(posterior, "_BLOCK_ELEMENTS", 10 * est.posterior_mean_.shape[0])
    moments = _spy(monkeypatch, E, "predict_moments")
    outputs = _spy(monkeypatch, E.predictive, "predict_output_moments")
    est.predict(X[:1], return_std=True)
    est.predict_logpmf(X[:1], [1.0])
    assert moments == [8] and outputs == [8]


def test_partial_fit_compiles_bounded_programs(compiles):
    width = 7  # used nowhere else: every program for it is new
    rng = np.random.default_rng(7)
    clf = BongClassifier(family="diag", prior_variance=1.0, random_state=0)  # one filter
    sizes = [1, 2, 3, 7, 8, 9, 63, 64, 65, 100, 511, 512, 513, 1000]
    for i, n in enumerate(sizes):
        Xb = rng.normal(size=(n, width))
        yb = (Xb[:, 0] > 0).astype(int)
        clf.partial_fit(Xb, yb, classes=[0, 1] if i == 0 else None)
    assert clf.n_observations_ == sum(sizes)
    compiled = compiles["jit(run_stream_checked)"]  # the estimators' stream program
    assert 1 <= compiled <= len(E.CHUNK_SIZES)


def test_default_bank_of_a_dlr_classifier_finishes_in_a_fresh_process():
    """``BongClassifier()`` on digits (the dlr family, P = 650, and the evidence bank of
    filters vmapped) finishes in a fresh process on a 2-core machine. With XLA's batched
    CPU eigensolver the bank's two concurrent batched ``eigh`` calls each held one of the
    two intra-op pool threads while waiting for parts queued behind the other, and the
    fit hung forever with every thread idle (see
    ``tests/test_linalg.py::test_batched_lapack_kernels_run_one_matrix_at_a_time``). A
    hang shows here as the subprocess's timeout."""
    import subprocess
    import sys

    script = (
        "from sklearn.datasets import load_digits; import skbong; "
        "X, y = load_digits(return_X_y=True); "
        "c = skbong.BongClassifier(random_state=0).fit(X, y); "
        "print(c.family_, round(c.score(X, y), 2))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    family, accuracy = proc.stdout.split()
    assert family == "dlr" and float(accuracy) > 0.9
