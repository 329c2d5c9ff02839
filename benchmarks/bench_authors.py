"""skbong against the authors' research code, timed in the same process, interleaved.

The authors' per-observation times were first measured once, on another day (the
``authors (recorded)`` column, bench_steps' HEADLINE); this VM's speed drifts by ±30 %
from day to day, so the fair comparison is a ratio taken in one run. This script imports the update functions of the paper's code
(``bong.src.bong``: ``update_lfg_bong`` = CM-EKF, ``update_ldlrg_bong`` = LO-FI,
``update_ldg_bong`` = VD-EKF) from a checkout you supply, runs them in a
``lax.fori_loop`` over the same 512-step stream, model and prior as skbong's
``bench_steps.py`` cases, and alternates them with skbong's compiled stream, keeping
the fastest run of each:

* ``skbong``: ``engine.run_stream`` as the estimators call it (with the validity check
  and state selection that keep a bad update from corrupting the belief, and the
  prequential log-likelihood and outputs of every step);
* ``skbong update only``: the same update without those two extras, as research code
  times it (``bench_profile.py``'s variant);
* ``authors``: the authors' update in the same loop;
* ``public fit``: the same rows through the estimator a user calls,
  ``BongRegressor(...).fit(X, y)`` (``BongClassifier`` for the softmax case) with the
  case's family, rank 10, float32, the same fixed noise and prior variance (the prior
  bank and the learned noise would run different algorithms), one pass (``passes=1``: a
  network's ``fit`` makes ten tempered passes by default) and every other parameter at
  its default: validation, conversions, the step checks, the calibration window and
  the fitted attributes included.

It also prints the largest difference between the two posterior means after the stream,
to show that the same algorithm is timed: CM-EKF and LO-FI agree to float32 rounding
(for softmax outputs the authors' EKF on the class probabilities has the same
Gauss-Newton curvature up to its 1e-5 jitter). The diagonal updates differ: the authors'
``update_ldg_bong`` moves the mean with the Kalman gain of the predicted diagonal
covariance, BONG's natural step (VD-EKF, eqs. 212–215) with the updated one; both cost
O(P C) per row.

The checkout is not part of skbong and nothing of it is copied: get it with
``git clone https://github.com/petergchang/bong``. Its ``bong.util`` imports flax,
optuna, pytz and jax_tqdm for experiment helpers this script does not call; where
those are not installed they are replaced by inert stand-ins before the import.

Usage: ``python benchmarks/bench_authors.py --authors-src DIR [--quick] [--out FILE]``
"""

import importlib.util
import sys
from functools import partial
from unittest import mock

import jax
import jax.numpy as jnp
import numpy as np
from _common import (
    CASES,
    E,
    block,
    interleaved,
    load_note,
    make_problem,
    parser,
    table,
    write_json,
)
from bench_profile import VARIANTS
from bench_profile import run as run_variant
from bench_steps import HEADLINE as STEPS_HEADLINE

from skbong import BongClassifier, BongRegressor  # before the stand-ins of import_authors

STEPS = 512
# (case, family, the authors' µs as measured once): bench_steps' headline BONG cases
HEADLINE = [(case, family, authors) for case, family, rule, authors, _ in STEPS_HEADLINE
            if rule == "bong"]
UPDATES = {"full": "update_lfg_bong", "dlr": "update_ldlrg_bong", "diag": "update_ldg_bong"}


def import_authors(src):
    """``bong.src.bong`` from the checkout ``src``."""
    for names in (("flax", "flax.linen"), ("optuna",), ("pytz",), ("jax_tqdm",)):
        if importlib.util.find_spec(names[0]) is None:
            for name in names:
                sys.modules[name] = mock.MagicMock(name=name)
    sys.path.insert(0, str(src))
    from bong.src import bong, states

    return bong, states


def authors_problem(authors, case, family, state, mean0, hyper):
    """The authors' initial state and mean / covariance functions for one case."""
    bong, states = authors
    model = E.MLP(**CASES[case]["model"])
    obs_var = hyper.obs_var

    def mean_fn(w, x):
        return model.apply(w, x[None])[0]

    if CASES[case]["likelihood"] == "categorical":
        # as in their classification experiments: the EKF on the class probabilities
        # with the moment-matched covariance (the same Gauss-Newton curvature as
        # skbong's LIN-HESS up to the 1e-5 jitter)
        logits_fn = mean_fn

        def mean_fn(w, x):
            return jax.nn.softmax(logits_fn(w, x))

        def cov_fn(w, x):
            p = mean_fn(w, x)
            return jnp.diag(p) - jnp.outer(p, p) + 1e-5 * jnp.eye(p.shape[0], dtype=p.dtype)
    else:

        def cov_fn(w, x):
            return obs_var * jnp.eye(1, dtype=w.dtype)

    p, prior_var = mean0.shape[0], hyper.prior_var
    if family == "full":
        init = states.AgentState(mean0, prior_var * jnp.eye(p, dtype=mean0.dtype))
    elif family == "diag":
        init = states.AgentState(mean0, prior_var * jnp.ones(p, mean0.dtype))
    else:
        init = states.DLRAgentState(mean0, jnp.full((p, 1), 1.0 / prior_var, mean0.dtype),
                                    jnp.zeros_like(state.prec_lr))
    update = partial(getattr(bong, UPDATES[family]), log_likelihood=None,
                     emission_mean_function=mean_fn, emission_cov_function=cov_fn)
    return init, update


@partial(jax.jit, static_argnames=("update",))
def run_authors(update, init, xs, ys, key):
    """The authors' update over the stream (one row per step), in a fori_loop."""

    def body(t, state):
        return update(jax.random.fold_in(key, t), state, xs[t, 0], ys[t, 0])

    return jax.lax.fori_loop(0, xs.shape[0], body, init)


def public_fit(case, family, hyper, xs, ys):
    """``fit`` of the case's estimator on the stream's rows (a closure timed as a call)."""
    spec = CASES[case]
    X = np.asarray(xs).reshape(-1, xs.shape[-1])
    Y = np.asarray(ys).reshape(-1, ys.shape[-1])
    # passes=1: one pass over the rows, the authors' algorithm (a network's fit makes ten
    # tempered passes by default)
    common = dict(hidden_layer_sizes=spec["model"].get("hidden", ()),
                  activation=spec["model"].get("activation", "relu"), family=family, rank=10,
                  dtype="float32", prior_variance=float(hyper.prior_var), passes=1,
                  random_state=0)
    if spec["likelihood"] == "categorical":
        est, y = BongClassifier(**common), Y.argmax(axis=1)
    else:
        est, y = BongRegressor(obs_variance=float(hyper.obs_var), **common), Y[:, 0]

    def call():
        est.fit(X, y)  # the belief comes back as numpy arrays: nothing left to wait for

    return call


def compare(authors, case, family, budget):
    cfg, state, mean0, hyper, (xs, ys, ws) = make_problem(case, family, steps=STEPS)
    key = jax.random.PRNGKey(0)
    init, update = authors_problem(authors, case, family, state, mean0, hyper)
    fit = public_fit(case, family, hyper, xs, ys)
    calls = {
        "skbong": lambda: E.run_stream(cfg, state, mean0, hyper, xs, ys, ws, 0, key)[0],
        "skbong update only": lambda: run_variant(cfg, VARIANTS["update only"], state, mean0,
                                                  hyper, xs, ys, ws, key)[0],
        "authors": lambda: run_authors(update, init, xs, ys, key),
    }
    means = {name: np.asarray(block(fn()).mean, np.float64) for name, fn in calls.items()}
    fit()  # compiles its programs before the timing
    calls["public fit"] = fit
    us = {name: t / STEPS * 1e6 for name, t in interleaved(calls, budget).items()}
    return {
        "case": case, "P": int(mean0.shape[0]), "family": family, **us,
        "authors / skbong": us["authors"] / us["skbong"],
        "authors / update only": us["authors"] / us["skbong update only"],
        "authors / public fit": us["authors"] / us["public fit"],
        "max |mean diff|": float(np.max(np.abs(means["skbong"] - means["authors"]))),
        "max |mean change|": float(np.max(np.abs(means["skbong"] - np.asarray(mean0)))),
    }


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--authors-src", required=True,
                   help="checkout of https://github.com/petergchang/bong (the repository root)")
    p.add_argument("--budget", type=float, default=None,
                   help="seconds of interleaved runs per case (default 20, --quick 6)")
    args = p.parse_args()
    authors = import_authors(args.authors_src)
    budget = args.budget or (6.0 if args.quick else 20.0)
    rows = []
    for case, family, design_us in HEADLINE:
        row = compare(authors, case, family, budget)
        row["authors (recorded)"] = design_us
        rows.append(row)
        print(f"{case} {family}: skbong {row['skbong']:.2f} µs, update only "
              f"{row['skbong update only']:.2f}, public fit {row['public fit']:.2f}, "
              f"authors {row['authors']:.2f}", flush=True)
    note = load_note()
    print(f"\n== µs per step, fastest of interleaved runs ==  ({note})")
    cols = ["case", "P", "family", "skbong", "skbong update only", "public fit", "authors",
            "authors (recorded)", "authors / skbong", "authors / update only",
            "authors / public fit", "max |mean diff|", "max |mean change|"]
    fmt = {c: "{:.2f}" for c in cols[3:11]}
    fmt.update({"max |mean diff|": "{:.1e}", "max |mean change|": "{:.1e}"})
    table(rows, cols, fmt)
    write_json({"budget_s": budget, "steps": STEPS, "load": note, "rows": rows},
               "authors_quick.json" if args.quick else "authors.json", args.out)


if __name__ == "__main__":
    main()
