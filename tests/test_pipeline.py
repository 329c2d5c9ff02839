"""``StreamingPipeline`` forwards the final step's uncertainty methods.

What is tested, and why:

* Each forwarded method (``predict_interval``, ``predict_logpdf``, ``predict_logpmf``,
  ``sample_y``, ``sample_f``, ``sample_proba``) and those ``Pipeline`` forwards itself
  (``predict(return_std=True)``, ``predict_proba``) return bit for bit what the final
  step returns on X transformed by hand through every earlier step, in order (two
  scalers, so that skipping or reordering a step changes the inputs), with the
  keyword arguments passed on (a ``coverage`` or ``n_samples`` dropped on the way
  changes the result's values or shape).
* The transform matters: on the raw X the final step gives something else (a method
  that forgot to transform would pass the comparison only by accident).
* A method exists only when the final step has it (``hasattr`` is False, and calling
  it raises ``AttributeError``), as ``sklearn.utils.metaestimators.available_if`` does.
"""

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.linear_model import SGDRegressor
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from skbong import (
    BongClassifier,
    BongPoissonRegressor,
    BongRegressor,
    VariationalRegressor,
    make_streaming_pipeline,
)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

RNG = np.random.default_rng(3)
X = 3.0 + 2.0 * RNG.normal(size=(24, 3))
F = (X - 3.0) @ [0.5, -0.25, 0.1]
Y = F + 0.1 * RNG.normal(size=24)
Y_CLASS = (F > 0).astype(int)
Y_COUNT = RNG.poisson(np.exp(F))
FORWARDED = (
    "predict_interval",
    "predict_logpdf",
    "predict_logpmf",
    "sample_y",
    "sample_f",
    "sample_proba",
)

# final step, targets, and each method with its keyword arguments
CASES = {
    "regressor": (
        lambda: BongRegressor(random_state=0),
        Y,
        {
            "predict": {"return_std": True},
            "predict_interval": {"coverage": 0.5},
            "predict_logpdf": {"y": Y},
            "sample_y": {"n_samples": 3, "random_state": 1},
            "sample_f": {"n_samples": 2, "random_state": 1},
        },
    ),
    "variational": (
        lambda: VariationalRegressor(max_iter=2, random_state=0),
        Y,
        {
            "predict": {"return_std": True},
            "predict_interval": {"coverage": 0.5},
            "predict_logpdf": {"y": Y},
            "sample_y": {"n_samples": 3, "random_state": 1},
        },
    ),
    "poisson": (
        lambda: BongPoissonRegressor(random_state=0),
        Y_COUNT,
        {
            "predict": {"return_std": True},
            "predict_logpmf": {"y": Y_COUNT},
            "sample_y": {"n_samples": 3, "random_state": 1},
            "sample_f": {"n_samples": 2, "random_state": 1},
        },
    ),
    "classifier": (
        lambda: BongClassifier(random_state=0),
        Y_CLASS,
        {
            "predict_proba": {},
            "sample_proba": {"n_samples": 3, "random_state": 1},
        },
    ),
}


def _streamed(final, y):
    pipe = make_streaming_pipeline(StandardScaler(), MinMaxScaler(), final)
    kw = {"classes": [0, 1]} if isinstance(final, BongClassifier) else {}
    return pipe.partial_fit(X[:12], y[:12], **kw).partial_fit(X[12:], y[12:])


def _parts(result):
    """A method's arrays: ``predict(return_std=True)`` returns two."""
    return result if isinstance(result, tuple) else (result,)


@pytest.mark.parametrize("case", list(CASES))
def test_methods_equal_the_steps_called_by_hand(case):
    make, y, methods = CASES[case]
    pipe = _streamed(make(), y)
    scaler, minmax, final = (step for _, step in pipe.steps)
    Xt = minmax.transform(scaler.transform(X))
    for name, kw in methods.items():
        got, expected = getattr(pipe, name)(X, **kw), getattr(final, name)(Xt, **kw)
        raw = getattr(final, name)(X, **kw)
        for g, e, r in zip(_parts(got), _parts(expected), _parts(raw), strict=True):
            assert_array_equal(g, e, err_msg=name)
            assert not np.array_equal(r, e), name
        default = {k: v for k, v in kw.items() if k not in ("coverage", "n_samples")}
        if default != kw:  # the keyword arguments reach the final step
            assert not np.array_equal(getattr(pipe, name)(X, **default), got), name


@pytest.mark.parametrize(
    "final, present",
    [
        (BongRegressor(), {"predict_interval", "predict_logpdf", "sample_y", "sample_f"}),
        (BongPoissonRegressor(), {"predict_logpmf", "sample_y", "sample_f"}),
        (BongClassifier(), {"sample_proba"}),
        (SGDRegressor(), set()),
        ("passthrough", set()),
    ],
    ids=["regressor", "poisson", "classifier", "sgd", "passthrough"],
)
def test_methods_exist_only_when_the_final_step_has_them(final, present):
    pipe = make_streaming_pipeline(StandardScaler(), final)
    for name in FORWARDED:
        assert hasattr(pipe, name) == (name in present), name
        if name not in present:
            with pytest.raises(AttributeError, match=name):
                getattr(pipe, name)(X)
