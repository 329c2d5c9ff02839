"""One-row calls on this process's platform (meant for a GPU): median µs per call.

* ``BongClassifier`` on the BONG paper's MNIST CNN (dlr-10, LIN-HESS, σ₀² = 0.01,
  float32, ``benchmarks/paper/mnist_cnn.py``): one-image ``partial_fit`` and
  ``predict_proba``;
* the default ``BongRegressor`` and ``BongClassifier`` on 10 Gaussian features: one-row
  ``partial_fit``.

Each median skips the first calls (warm-up). ``SKBONG_SRC=DIR`` times the checkout in
DIR instead, so that two revisions alternate in fresh processes under the same
conditions; ``--profile FILE`` adds a cProfile of 30 one-image CNN ``partial_fit``
calls. Without MNIST under ``--data-dir`` the CNN rows are left out.

Usage: ``python benchmarks/bench_gpu_calls.py [--data-dir DIR] [--profile FILE] [--out FILE]``
"""

import sys
import time
from pathlib import Path

import jax
import numpy as np
from _common import ROOT, load_note, parser, write_json

sys.path.insert(0, str(ROOT / "paper"))
DATA = (ROOT.parent / ".." / "shared" / "data").resolve()


def median_us(call, n, skip):
    """Median wall time of ``call(i)`` for i = skip .. n - 1, in µs."""
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        call(i)
        times.append(time.perf_counter() - t0)
    return float(np.median(times[skip:])) * 1e6


def cnn_estimator():
    """The paper's CNN as a ``BongClassifier`` (dlr-10, LIN-HESS, σ₀² = 0.01, float32)."""
    from mnist_cnn import cnn_apply, cnn_init

    from skbong import BongClassifier

    return BongClassifier(model=(cnn_init, cnn_apply), family="dlr", rank=10,
                          hessian="lin_hess", rule="bong", prior_variance=0.01,
                          dtype="float32", random_state=0)


def cnn_calls(mnist, profile=None):
    """The CNN's one-image calls on ``mnist = (Xtr, ytr, Xte, yte)`` (``mnist_cnn.load``),
    from a fresh estimator."""
    Xtr, ytr, Xte, _ = mnist
    est = cnn_estimator()
    est.partial_fit(Xtr[:1], ytr[:1], classes=np.arange(10))
    res = {
        "cnn_partial_fit_us": median_us(
            lambda i: est.partial_fit(Xtr[1 + i:2 + i], ytr[1 + i:2 + i]), 60, 10),
        "cnn_predict_proba_us": median_us(lambda i: est.predict_proba(Xte[i:i + 1]), 40, 10),
    }
    if profile is not None:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for t in range(100, 130):
            est.partial_fit(Xtr[t:t + 1], ytr[t:t + 1])
        prof.disable()
        with open(profile, "w") as f:
            pstats.Stats(prof, stream=f).sort_stats("tottime").print_stats(30)
    return res


def linear_calls():
    """The default estimators' one-row ``partial_fit`` on 10 features."""
    from skbong import BongClassifier, BongRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 10))
    y = X @ rng.normal(size=10) + 0.1 * rng.normal(size=400)
    labels = (y > 0).astype(int)
    reg = BongRegressor().partial_fit(X[:1], y[:1])
    clf = BongClassifier().partial_fit(X[:1], labels[:1], classes=[0, 1])
    return {
        "reg_partial_fit_us": median_us(
            lambda i: reg.partial_fit(X[1 + i:2 + i], y[1 + i:2 + i]), 300, 50),
        "clf_partial_fit_us": median_us(
            lambda i: clf.partial_fit(X[1 + i:2 + i], labels[1 + i:2 + i]), 300, 50),
    }


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=DATA)
    p.add_argument("--profile", type=Path, default=None)
    args = p.parse_args()
    from mnist_cnn import load

    import skbong

    res = {"skbong": skbong.__file__, "device": str(jax.devices()[0])}
    if (args.data_dir / "mnist" / "mnist.npz").exists():
        res.update(cnn_calls(load(args.data_dir), args.profile))
    res.update(linear_calls())
    for k, v in res.items():
        print(f"{k:24s} {v:.0f}" if isinstance(v, float) else f"{k:24s} {v}")
    print(load_note())
    write_json(res, "gpu_calls.json", args.out)


if __name__ == "__main__":
    main()
