"""``python -m skbong``: stream the digits data through BongClassifier and SGDClassifier.

Both learners sit in a StreamingPipeline behind a StandardScaler and see the same
shuffled stream in mini-batches. Each batch is first predicted (prequential
evaluation), then learned from. Prints prequential accuracy and log-loss for both
and saves a plot of the two learning curves (needs matplotlib).
"""

import argparse
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.preprocessing import StandardScaler

from . import BongClassifier, make_streaming_pipeline
from .metrics import prequential_curve


def _progress(total, enabled, name):
    """A tqdm bar of ``total`` rows for one learner, or None (disabled, or no tqdm)."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        tqdm = None
    if tqdm is None or not enabled:
        return None
    return tqdm(total=total, unit="row", desc=f"streaming digits: {name}")


def prequential(learners, X, y, classes, batch_size, show_progress=True):
    """:func:`~skbong.metrics.prequential_curve` of each learner (accuracy and log-loss),
    with the seconds each took.

    Each learner streams the rows once and gets its own progress bar of ``len(y)`` rows.
    """
    curves, seconds = {}, {}
    for name, learner in learners.items():
        bar = _progress(len(y), show_progress, name)
        tic = time.perf_counter()
        try:
            n_seen, values = prequential_curve(
                learner, X, y, batch_size, ["accuracy", "log_loss"], classes,
                progress=None if bar is None else bar.update,
            )
            seconds[name] = time.perf_counter() - tic
        finally:
            if bar is not None:
                bar.close()
        curves[name] = {"acc": values[:, 0], "ll": values[:, 1]}
    return n_seen, curves, seconds


def _prior_variance(text):
    """``--prior-variance``: "auto", "bank" or a positive number."""
    return text if text in ("auto", "bank") else float(text)


def main(argv=None):
    """Run the demo; see ``python -m skbong --help``."""
    parser = argparse.ArgumentParser(prog="python -m skbong", description=__doc__)
    parser.add_argument("--batch-size", type=int, default=20, help="rows per partial_fit call")
    parser.add_argument(
        "--hidden", type=int, default=32, help="hidden units (0: softmax regression)"
    )
    parser.add_argument(
        "--prior-variance",
        type=_prior_variance,
        default="auto",
        help="prior_variance of BongClassifier: a number (a layer's weights get it / fan-in), "
        "'bank', or 'auto' (its default: the bank for softmax regression, 1 for a network)",
    )
    parser.add_argument("--seed", type=int, default=0, help="stream order and model seed")
    parser.add_argument("--plot", default="skbong_digits.png", help="where to save the plot")
    parser.add_argument("--no-plot", action="store_true", help="do not draw the plot")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)

    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(args.seed).permutation(len(y))
    X, y = X[order], y[order]
    classes = np.unique(y)
    hidden = (args.hidden,) if args.hidden > 0 else ()
    learners = {
        "BongClassifier": make_streaming_pipeline(
            StandardScaler(),
            BongClassifier(
                hidden_layer_sizes=hidden,
                prior_variance=args.prior_variance,
                random_state=args.seed,
            ),
        ),
        "SGDClassifier": make_streaming_pipeline(
            StandardScaler(), SGDClassifier(loss="log_loss", random_state=args.seed)
        ),
    }
    print(
        f"digits: {len(y)} rows, {X.shape[1]} features, {len(classes)} classes; "
        f"mini-batches of {args.batch_size}; BongClassifier = BONG, LIN-HESS, DLR-10, "
        f"MLP {X.shape[1]}-{'-'.join(map(str, hidden)) + '-' if hidden else ''}{len(classes)}"
    )
    n_seen, stats, seconds = prequential(
        learners, X, y, classes, args.batch_size, show_progress=not args.quiet
    )
    print(f"{'learner':16s} {'accuracy':>9s} {'log-loss':>9s} {'seconds':>8s}")
    for name, s in stats.items():
        print(f"{name:16s} {s['acc'][-1]:9.4f} {s['ll'][-1]:9.4f} {seconds[name]:8.2f}")
    if not args.no_plot:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib is not installed (pip install 'skbong[plot]'): no plot saved")
            return 0
        from .plotting import plot_prequential

        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
        plot_prequential({k: (n_seen, s["acc"]) for k, s in stats.items()}, ax1)
        plot_prequential(
            {k: (n_seen, s["ll"]) for k, s in stats.items()}, ax2, "prequential log-loss"
        )
        fig.suptitle("Streaming digits: predict each batch, then learn from it")
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"learning curves saved to {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
