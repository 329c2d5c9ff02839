"""What the evidence bank costs: ``prior_variance="auto"`` against one filter.

For the linear regressor ``"auto"`` is a bank of 7 filters (σ₀² ∈ 10⁻³ … 10³) weighted by
their evidence. Where every filter is the exact conjugate posterior (the defaults: the
full covariance, BONG-LIN-HESS, no drift, float64, one row per step) a call of more than
2P rows takes them in closed form from the rows' shared statistics
(:mod:`skbong._online.conjugate`), while one reference filter streams the rows for the row
checks. This script times, in one process and interleaved (the fastest of repeated
compiled fits, so that all see the same load):

* ``one filter``: ``BongRegressor(prior_variance=1.0).fit(X, y)``;
* ``bank``: ``BongRegressor().fit(X, y)``, the default;
* ``bank, streamed``: the same bank with the closed form switched off, every filter
  streaming every row (what the bank cost before the closed form);
* ``BayesianRidge``: the scikit-learn estimator a user would take instead;

on synthetic linear-Gaussian data (x ~ N(0, I), y = x·w + 2 + N(0, 0.5²)) at several
n × d; for the linear classifier and count model, whose banks stream (their filters
linearise a non-Gaussian likelihood, each at its own mean, so no filter's work serves
another): ``BongClassifier()`` on breast cancer (P = 31, ``full``) and digits (P = 650,
10 classes, ``dlr``; its bank retires the filters its evidence leaves behind,
:func:`skbong._online.bank.retires`), standardised, and ``BongPoissonRegressor()`` on
2,000 rows of 5 features; and for a network, where the bank is not the default
(``prior_variance="bank"`` against the default fixed σ₀², one 50-unit layer, float32,
both one pass: a bank's weights are the evidence of one pass, so it makes no tempered
passes). Then the drift bank, ``drift="auto"`` (3 drifts weighted by their evidence),
against one static filter and one filter of a fixed drift (0.999), for the linear
regressor (σ₀² = 1, 2,000 × 8) and the same network.
It prints the times and the ratios to one filter.

Usage: ``python benchmarks/bench_bank.py [--quick] [--out FILE]``
"""

import warnings

import numpy as np
from _common import interleaved, load_note, parser, write_json
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.linear_model import BayesianRidge
from sklearn.preprocessing import StandardScaler

from skbong import BongClassifier, BongPoissonRegressor, BongRegressor
from skbong._online import stream

LINEAR = [(500, 8), (5000, 8), (2000, 50), (20000, 100)]
QUICK = [(500, 8), (2000, 50)]


def _data(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X @ rng.normal(size=d) + 2.0 + 0.5 * rng.normal(size=n)


def _streamed_bank(X, y):
    """The default bank with every filter streaming every row."""
    original = stream.conjugate_bank
    stream.conjugate_bank = lambda est, config, X, w: False
    try:
        return BongRegressor().fit(X, y)
    finally:
        stream.conjugate_bank = original


def _cases(quick):
    for n, d in QUICK if quick else LINEAR:
        X, y = _data(n, d)
        yield f"linear {n} x {d}", {
            "one filter": lambda X=X, y=y: BongRegressor(prior_variance=1.0).fit(X, y),
            "bank": lambda X=X, y=y: BongRegressor().fit(X, y),
            "bank, streamed": lambda X=X, y=y: _streamed_bank(X, y),
            "BayesianRidge": lambda X=X, y=y: BayesianRidge().fit(X, y),
        }
    for name, loader in (("breast cancer", load_breast_cancer), ("digits", load_digits)):
        X, y = loader(return_X_y=True)
        X = StandardScaler().fit_transform(X)
        yield f"linear classifier, {name}", _glm_calls(BongClassifier, X, y)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 5))
    y = rng.poisson(np.exp(0.5 + X @ np.array([0.5, -0.3, 0.2, 0.0, 0.1])))
    yield "linear counts 2000 x 5", _glm_calls(BongPoissonRegressor, X, y)
    X, y = _data(1000 if quick else 2000, 8)
    net = dict(hidden_layer_sizes=(50,), passes=1, random_state=0)  # a bank makes one pass
    yield f"network (50,) {len(X)} x 8", {
        "one filter": lambda: BongRegressor(**net).fit(X, y),
        "bank": lambda: BongRegressor(prior_variance="bank", **net).fit(X, y),
    }
    for name, kw in (("linear", dict(prior_variance=1.0)), ("network (50,)", net)):
        yield f"drift, {name} {len(X)} x 8", {
            "one filter": lambda kw=kw: BongRegressor(**kw).fit(X, y),
            "bank": lambda kw=kw: BongRegressor(drift="auto", **kw).fit(X, y),
            "one drifting filter": lambda kw=kw: BongRegressor(drift=0.999, **kw).fit(X, y),
        }


def _glm_calls(cls, X, y):
    """A GLM's fits, the bank against one filter: with ``fit``'s further passes (the
    default) and with one pass (``refine=0``), where the passes' share shows."""
    return {
        "one filter": lambda: cls(prior_variance=1.0).fit(X, y),
        "bank": lambda: cls().fit(X, y),
        "one filter, one pass": lambda: cls(prior_variance=1.0, refine=0).fit(X, y),
        "bank, one pass": lambda: cls(refine=0).fit(X, y),
    }


def _quiet(fit):
    """``fit`` returning nothing (``interleaved`` waits on the arrays a call returns)."""

    def call():
        fit()

    return call


def main():
    args = parser(__doc__.splitlines()[0]).parse_args()
    print(f"# bench_bank ({load_note()})")
    print(f"{'case':24s} {'fit':16s} {'seconds':>9s} {'/ one filter':>13s}")
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, calls in _cases(args.quick):
            for fn in calls.values():
                fn()  # compile
            calls = {label: _quiet(fn) for label, fn in calls.items()}
            best = interleaved(calls, budget=2.0 if args.quick else 6.0)
            for label, seconds in best.items():
                ratio = seconds / best["one filter"]
                rows.append({"case": name, "fit": label, "seconds": seconds, "ratio": ratio})
                print(f"{name:24s} {label:16s} {seconds:9.4f} {ratio:12.2f}x")
    print(f"# end ({load_note()})")
    write_json({"rows": rows}, "bank.json", args.out)


if __name__ == "__main__":
    main()
