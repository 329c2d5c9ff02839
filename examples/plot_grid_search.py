r"""
Choosing the prior variance with GridSearchCV
=============================================

The prior variance :math:`\sigma_0^2` of the weights is the hyperparameter that matters
most for a BONG network: too small and the network cannot move away from its random
initialisation, too large and the first natural-gradient steps overshoot. Because
:class:`~skbong.BongClassifier` is an ordinary scikit-learn estimator it can be tuned
inside a :class:`~sklearn.pipeline.Pipeline` with
:class:`~sklearn.model_selection.GridSearchCV`.

Every real-valued hyperparameter (``prior_variance``, ``obs_variance``,
``learning_rate``, ``drift``, ``process_noise``) is a *traced* argument of the compiled
engine, so all candidates of the grid reuse the program compiled for the first one:
only the first fit pays for compilation.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skbong import BongClassifier

X, y = load_breast_cancer(return_X_y=True)
order = np.random.default_rng(0).permutation(len(y))  # an online learner sees rows in order
X, y = X[order], y[order]

pipe = make_pipeline(
    StandardScaler(),
    BongClassifier(hidden_layer_sizes=(16,), activation="tanh", random_state=0),
)
grid = {"bongclassifier__prior_variance": np.logspace(-2, 1.5, 8)}
search = GridSearchCV(
    pipe,
    grid,
    scoring={"log_loss": "neg_log_loss", "accuracy": "accuracy"},
    refit="log_loss",
    cv=StratifiedKFold(n_splits=3, shuffle=True, random_state=0),
)
search.fit(X, y)

# %%
# The validation curve
# --------------------
# Held-out log-loss and accuracy of each candidate (mean ± standard deviation over
# the three folds). The log-loss, which also judges the predicted probabilities,
# and the accuracy agree on the range of good prior variances.
res = search.cv_results_
variances = np.asarray(res["param_bongclassifier__prior_variance"], dtype=float)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
ax1.errorbar(variances, -res["mean_test_log_loss"], res["std_test_log_loss"], marker="o")
ax1.set_ylabel("held-out log-loss")
ax2.errorbar(variances, res["mean_test_accuracy"], res["std_test_accuracy"], marker="o")
ax2.set_ylabel("held-out accuracy")
best = search.best_params_["bongclassifier__prior_variance"]
for ax in (ax1, ax2):
    ax.set_xscale("log")
    ax.set_xlabel("prior_variance")
    ax.axvline(best, color="k", ls=":", lw=1)
fig.suptitle(f"best prior_variance = {best:.3g} (log-loss)")
fig.tight_layout()

# %%
# One compiled program for the whole grid
# ---------------------------------------
# The first candidate's fits include the compilation of the engine; the later ones,
# which differ only in the traced prior variance, reuse it.
for v, seconds in zip(variances, res["mean_fit_time"]):
    print(f"prior_variance={v:8.4f}: mean fit time {seconds:.3f} s")
print(f"best held-out log-loss {-search.best_score_:.3f}")
plt.show()
