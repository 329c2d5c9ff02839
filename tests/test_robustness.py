"""Rows a model must not learn silently: absurd targets, rows beyond the dtype's resolution
for the diagonal family, and skipped calls that would leave a model predicting nonsense.

* An absurd row (a Gaussian-noise target more than ``OUTLIER_Z`` = 1e6 standard deviations
  of the one-step linearised predictive from its mean; probability below 1e-12 under the
  model) is refused: with ``on_error="raise"`` the call fails naming the row and nothing
  changes, with ``"skip"`` the row is left out with a warning, and the belief equals the
  one learned from the other rows. A fresh belief's first row is not tested (the prior
  predictive says nothing about the scale of y).
* ``family="diag"`` refuses a step that would move a coordinate by more than
  ``OUTLIER_Z`` of its own standard deviation (rows scaled by 1e30, which the full and
  dlr families refuse as well).
* A call with ``on_error="skip"`` that leaves a model predicting non-finite values at the
  rows it learned is refused whole.
* A call with ``on_error="skip"`` that learned nothing at all leaves no fitted model.
"""

import warnings

import numpy as np
import pytest

from skbong import BongRegressor, NonFiniteUpdateError, OutliersWarning, SkippedRowsWarning
from skbong import engine as E

RNG = np.random.default_rng(0)
X = RNG.normal(size=(200, 3))
Y = X @ np.array([1.0, 2.0, 3.0]) + 0.1 * RNG.normal(size=200)
X_NEW, Y_NEW = X[:5] + 0.01, Y[:5].copy()


def _state(est):
    return [np.array(a, copy=True) for a in est._state]


def _same(a, b):
    return all(np.array_equal(u, v) for u, v in zip(a, b))


@pytest.mark.parametrize("prior_variance", [1.0, "auto"], ids=["one filter", "bank"])
def test_absurd_target_refused_then_skipped(prior_variance):
    reg = BongRegressor(prior_variance=prior_variance).fit(X, Y)
    before, pred = _state(reg), reg.predict(X)
    y_bad = Y_NEW.copy()
    y_bad[2] = 1e30
    with pytest.raises(NonFiniteUpdateError, match=r"row 2 of this batch has a target more than 1e\+06"):
        reg.partial_fit(X_NEW, y_bad)
    assert _same(before, _state(reg)) and np.array_equal(pred, reg.predict(X))
    assert reg.n_observations_ == 200 and reg.n_skipped_ == 0

    skip = BongRegressor(prior_variance=prior_variance, on_error="skip").fit(X, Y)
    with pytest.warns(SkippedRowsWarning, match=r"skipped 1 row\(s\).*\(rows 2\)"):
        skip.partial_fit(X_NEW, y_bad)
    assert skip.n_skipped_ == 1 and skip.n_observations_ == 205
    # the other four rows were learned, as if the absurd one had not been there
    ref = BongRegressor(prior_variance=prior_variance).fit(X, Y)
    keep = np.arange(5) != 2
    ref.partial_fit(X_NEW[keep], Y_NEW[keep])
    np.testing.assert_allclose(skip.coef_, ref.coef_, rtol=1e-10, atol=1e-12)
    assert abs(skip.coef_ - before_coef(prior_variance)).max() > 0


def before_coef(prior_variance):
    return BongRegressor(prior_variance=prior_variance).fit(X, Y).coef_


def test_outlier_threshold_is_in_predictive_standard_deviations():
    """A target 1e4 predictive standard deviations away is learned (an outlier the model
    may meet), one 1e8 away is refused: the threshold is neither a fixed size of y nor a
    multiple of the noise alone."""
    reg = BongRegressor(obs_variance=0.01).fit(X, Y)
    x = X_NEW[:1]
    mean, std = reg.predict(x, return_std=True)
    far = reg.__sklearn_clone__().fit(X, Y)
    far.partial_fit(x, mean + 1e4 * std)  # learned: the belief moves
    assert not _same(_state(reg), _state(far))
    with pytest.raises(NonFiniteUpdateError, match="predictive standard deviations"):
        reg.partial_fit(x, mean + 1e8 * std)


def test_first_row_of_a_fresh_belief_sets_the_scale():
    """Targets around 1e10 are learned from the first row on (the prior predictive, unit
    noise and an intercept of variance 100, would put row 0 at 1e9 standard deviations)."""
    y = 1e9 * Y + 1e10
    reg = BongRegressor().fit(X, y)
    assert reg.n_skipped_ == 0
    assert reg.score(X, y) > 0.99


@pytest.mark.parametrize("family", ["full", "diag", "dlr"])
def test_diag_refuses_what_full_refuses(family):
    """Rows scaled by 1e30 are refused by the natural families' BONG step, and nothing
    changes: the dense ones lose positive definiteness, the diagonal one would move its
    intercept by ~1e28, some 1e29 of its standard deviations."""
    reg = BongRegressor(family=family).fit(X, Y)
    before = _state(reg)
    with pytest.raises(NonFiniteUpdateError, match="row"):
        reg.partial_fit(X_NEW * 1e30, Y_NEW)
    assert _same(before, _state(reg))


def test_diag_skips_rows_beyond_resolution():
    skip = BongRegressor(family="diag", on_error="skip").fit(X, Y)
    with pytest.warns(SkippedRowsWarning, match="skipped 5 of 5 rows"):
        skip.partial_fit(X_NEW * 1e30, Y_NEW)
    assert skip.n_skipped_ == 5
    assert skip.score(X, Y) > 0.99


def test_diag_step_limit_is_in_the_coordinates_own_standard_deviations():
    """The diagonal step is refused exactly where it would move some coordinate by more
    than OUTLIER_Z of its standard deviation before the step: 0.9e6 σ is taken, 1.1e6 σ
    refused, whatever σ."""
    from skbong.engine.families.diag import ALGEBRA

    for var in (1e-4, 1.0, 1e4):
        v = np.full(3, var)
        factor = np.zeros((3, 1))  # no information: σ²' = σ², so the step is σ² ∘ g
        for size, refused in ((0.9e6, False), (1.1e6, True)):
            g = np.array([0.0, size * np.sqrt(var) / var, 0.0])
            new, step = ALGEBRA.add_precision_factor(v, factor, g, None, None)
            assert np.all(np.isnan(np.asarray(new))) == refused, (var, size)
            np.testing.assert_allclose(np.asarray(step)[1], size * np.sqrt(var), rtol=1e-12)


def test_skip_that_learns_nothing_leaves_no_model():
    """A fresh fit whose every row is skipped (moment steps on rows more informative than
    the prior) would leave the prior, whose Student-t predictive has infinite variance at
    the noise prior's 2 degrees of freedom: it is refused and the estimator stays unfitted."""
    reg = BongRegressor(family="diag_moment", on_error="skip")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedRowsWarning)
        with pytest.raises(NonFiniteUpdateError, match="learned no row at all"):
            reg.fit(X * 20, Y)
    assert not hasattr(reg, "_state") and not hasattr(reg, "n_features_in_")


def test_outlier_constant_is_public():
    assert E.OUTLIER_Z == 1e6


def test_skip_that_leaves_non_finite_predictions_is_refused_whole():
    """dlr with ``on_error="skip"`` on rows scaled by 1e30: the steps it accepts leave a
    belief that predicts non-finite values at those rows, so the call is refused whole
    and nothing changes. The contract holds on any backend (refused unchanged, or a
    model whose predictions at the learned rows are finite); on the CPU, where it was
    measured, the call is refused."""
    import jax

    skip = BongRegressor(family="dlr", prior_variance=1.0, on_error="skip").fit(X, Y)
    before, pred = _state(skip), skip.predict(X)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SkippedRowsWarning)
            skip.partial_fit(X_NEW * 1e30, Y_NEW)
    except NonFiniteUpdateError as err:
        assert "predicts non-finite values at the rows it learned" in str(err)
        assert _same(before, _state(skip)) and np.array_equal(pred, skip.predict(X))
        assert skip.n_observations_ == 200 and skip.n_skipped_ == 0
        return
    assert jax.default_backend() != "cpu", "accepted on the CPU, where it was refused"
    mean, std = skip.predict(X_NEW * 1e30, return_std=True)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std))


# ----------------------------------------------------------------- gross outliers in y
def _outlier_rows(seed=0, n=2000, fraction=0.05, spread=(20.0, 50.0)):
    """A linear set with ``fraction`` of the targets moved by ±(20–50) noise s.d.; the
    indices of the moved rows."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    y = X @ rng.normal(size=8) + 1.0 + 0.5 * rng.normal(size=n)
    hit = np.sort(rng.choice(n, int(fraction * n), replace=False))
    y[hit] += rng.choice([-1.0, 1.0], hit.size) * rng.uniform(*spread, hit.size) * 0.5
    return X, y, hit


def _outlier_warnings(est, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    return [str(w.message) for w in caught if issubclass(w.category, OutliersWarning)]


@pytest.mark.parametrize(
    "params",
    [{}, {"prior_variance": 1.0}, {"drift": "auto"}, {"hidden_layer_sizes": (16,)}],
    ids=["closed-form bank", "one filter", "streamed bank", "network"],
)
def test_gross_outliers_warn_and_name_their_rows(params):
    X, y, hit = _outlier_rows()
    messages = _outlier_warnings(BongRegressor(random_state=0, **params), X, y)
    assert len(messages) == 1
    listed = messages[0].split("rows ")[-1].split(")")[0].replace(", ...", "")
    named = np.array([int(r) for r in listed.split(", ")])
    assert np.isin(named, hit).all()  # every row named is one that was moved
    assert "likelihood='student_t'" in messages[0]


@pytest.mark.parametrize("hidden", [(), (16,)])
def test_clean_targets_do_not_warn_of_outliers(hidden):
    from sklearn.datasets import load_diabetes

    X, y, _ = _outlier_rows(fraction=0.0)
    assert _outlier_warnings(BongRegressor(hidden_layer_sizes=hidden, random_state=0), X, y) == []
    X, y = load_diabetes(return_X_y=True)  # raw y on a scale of 10², skewed
    assert _outlier_warnings(BongRegressor(hidden_layer_sizes=hidden, random_state=0), X, y) == []


def test_student_t_likelihood_does_not_warn_of_outliers():
    X, y, _ = _outlier_rows()
    assert _outlier_warnings(BongRegressor(likelihood="student_t", random_state=0), X, y) == []


def test_a_few_outliers_are_below_the_warning_floor():
    # 4 moved rows of 2,000: fewer than OUTLIER_MIN_ROWS
    X, y, _ = _outlier_rows(fraction=0.002)
    assert _outlier_warnings(BongRegressor(random_state=0), X, y) == []
