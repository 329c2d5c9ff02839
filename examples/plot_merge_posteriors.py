"""
Merging posteriors learned on separate shards
=============================================

Posteriors learned independently from the same prior on disjoint shards of the data can
be combined: in natural parameters, η = η₀ + Σₖ (ηₖ − η₀)
(:func:`~skbong.merge_posteriors`). For the linear-Gaussian model this is the exact
posterior of all the rows, whichever way they were split; for other models it is the
streaming distributed variational Bayes approximation of Broderick et al. (2013).
:func:`~skbong.fit_partitions` does the same on a dask collection: one task per
partition, merged in a tree. See :doc:`/user_guide/scaling_out`.
"""

# %%
import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skbong import BongClassifier, BongRegressor, fit_partitions, merge_posteriors
from skbong.metrics import expected_calibration_error
from skbong.plotting import plot_reliability

# %%
# The conjugate case: exact
# -------------------------
# Bayesian linear regression with a learned noise (``obs_variance="auto"``, a
# normal–inverse-gamma posterior) on the diabetes data, split into five shards of very
# different sizes, one of them a single row. Each shard is fitted from the prior; the
# merge equals one fit on all rows to float64 rounding.
X, y = load_diabetes(return_X_y=True)
X = StandardScaler().fit_transform(X)
reg = BongRegressor(family="full", dtype="float64")
cuts = [0, 1, 40, 200, 320, len(y)]
shards = [clone(reg).fit(X[a:b], y[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
merged = merge_posteriors(shards)
single = clone(reg).fit(X, y)
for name in ("posterior_mean_", "posterior_var_", "obs_variance_"):
    gap = np.max(np.abs(getattr(merged, name) / getattr(single, name) - 1))
    print(f"{name}: largest relative difference merged vs one fit = {gap:.1e}")

# %%
# Each shard alone knows little (wide bars); the merge knows what all of them know.
fig, ax = plt.subplots(figsize=(7, 3.5))
coef = np.arange(X.shape[1])
for k, est in enumerate(shards[1:4]):
    sd = np.sqrt(est.posterior_var_[:-1])
    ax.errorbar(coef + 0.12 * k - 0.24, est.coef_, 2 * sd, fmt=".", alpha=0.5,
                label=f"shard of {est.n_observations_} rows")
ax.errorbar(coef + 0.18, merged.coef_, 2 * np.sqrt(merged.posterior_var_[:-1]), fmt="o",
            color="k", label="merged")
ax.plot(coef + 0.18, single.coef_, "x", color="C3", ms=9, label="one fit on all rows")
ax.set(xlabel="coefficient", ylabel="posterior mean ± 2 sd", xticks=coef)
ax.legend(fontsize=8, ncol=2)
fig.tight_layout()

# %%
# A non-conjugate model: an approximation
# ---------------------------------------
# Logistic regression on the breast-cancer data: one pass over the training rows against
# 8 shards fitted from the prior and merged. The merge adds the shards' Gaussian
# approximations of their likelihoods; each shard linearised around its own belief, so
# the result differs from the sequential pass, here by little.
X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
# A fixed prior: the classifier's default prior bank weighs its filters by an online
# evidence that is not a marginal likelihood, which does not merge across shards.
clf = BongClassifier(family="full", prior_variance=1.0, random_state=0)
one_pass = clone(clf).fit(X_train, y_train)
parts = np.array_split(np.arange(len(y_train)), 8)
merged_clf = merge_posteriors(
    [clone(clf).partial_fit(X_train[i], y_train[i], classes=[0, 1]) for i in parts]
)
fig, axes = plt.subplots(1, 2, figsize=(8, 3.5), sharey=True)
for ax, (name, est) in zip(axes, [("one pass", one_pass), ("8 shards merged", merged_clf)]):
    proba = est.predict_proba(X_test)
    plot_reliability(y_test, proba, ax=ax)
    ax.set_title(
        f"{name}: log-loss {log_loss(y_test, proba):.3f}, "
        f"ECE {expected_calibration_error(y_test, proba):.3f}",
        fontsize=9,
    )
fig.tight_layout()

# %%
# On a dask collection
# --------------------
# :func:`~skbong.fit_partitions` takes dask arrays (or DataFrames) and fits one copy of
# the estimator per partition, where the partition lies, then merges the posteriors in a
# tree of fan-in ``split_every``. Here dask's default threaded scheduler runs it; with a
# ``dask.distributed.Client`` of a ``LocalCluster`` (or a real cluster) active, the same
# call runs on its workers. The result is an ordinary fitted estimator.
Xd = da.from_array(X_train, chunks=(50, X_train.shape[1]))
yd = da.from_array(y_train, chunks=50)
fitted = fit_partitions(clf, Xd, yd, split_every=4)
print(f"{Xd.numblocks[0]} partitions, {fitted.n_observations_} rows learned; "
      f"test log-loss {log_loss(y_test, fitted.predict_proba(X_test)):.3f}")
fitted.partial_fit(X_test[:10], y_test[:10])  # and it goes on learning
print(f"after partial_fit: {fitted.n_observations_} rows")
