"""
Streaming through a pipeline with partial_fit
=============================================

A scikit-learn :class:`~sklearn.pipeline.Pipeline` has no ``partial_fit``: its
preprocessing steps would have to be fitted on data that, in a stream, has not arrived
yet. :class:`~skbong.StreamingPipeline`, built with
:func:`~skbong.make_streaming_pipeline`, calls ``partial_fit`` on every step that has
it — here a :class:`~sklearn.preprocessing.StandardScaler` that keeps running means and
variances — transforms the batch with the updated step, and passes the result to the
final estimator's ``partial_fit``.

The hand-written digits arrive in batches of 20 rows. Each batch is first predicted by
the pipeline as it stands, then learned from (prequential evaluation). We compare
:class:`~skbong.BongClassifier` with the same model without the scaler, and with
scikit-learn's :class:`~sklearn.linear_model.SGDClassifier` (logistic loss) behind the
same streaming scaler.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skbong import BongClassifier, make_streaming_pipeline
from skbong.metrics import prequential_curve
from skbong.plotting import plot_prequential

X, y = load_digits(return_X_y=True)
order = np.random.default_rng(0).permutation(len(y))
X, y = X[order], y[order]
classes = np.unique(y)

plain = make_pipeline(StandardScaler(), SGDClassifier())
print("a plain Pipeline has partial_fit:", hasattr(plain, "partial_fit"))

# %%
# One batch at a time
# -------------------
# This is what :func:`~skbong.metrics.prequential_curve` does for each learner below:
pipe = make_streaming_pipeline(
    StandardScaler(), BongClassifier(prior_variance=0.1, random_state=0)
)
for start in range(0, 100, 20):
    pipe.partial_fit(X[start : start + 20], y[start : start + 20], classes=classes)
scaler, bong = pipe.named_steps["standardscaler"], pipe.named_steps["bongclassifier"]
print(f"scaler has seen {scaler.n_samples_seen_} rows; the classifier {bong.n_observations_}")

# %%
# Prequential curves
# ------------------
learners = {
    "scaler + BongClassifier": make_streaming_pipeline(
        StandardScaler(), BongClassifier(prior_variance=0.1, random_state=0)
    ),
    "BongClassifier, raw pixels": BongClassifier(prior_variance=0.1, random_state=0),
    "scaler + SGDClassifier": make_streaming_pipeline(
        StandardScaler(), SGDClassifier(loss="log_loss", random_state=0)
    ),
}
accuracy, loss = {}, {}
for name, learner in learners.items():
    accuracy[name] = prequential_curve(learner, X, y, batch_size=20, metric="accuracy")
    loss[name] = prequential_curve(learner, X, y, batch_size=20, metric="log_loss")

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.2))
plot_prequential(accuracy, ax=ax1, ylabel="prequential accuracy")
plot_prequential(loss, ax=ax2, ylabel="prequential log-loss")
ax2.set_yscale("log")
fig.tight_layout()

# %%
# The Bayesian learner is accurate from the first batches and its probabilities are
# far better than SGD's (lower log-loss): every update weighs the new rows against
# everything learned so far, with no learning rate to tune. Without the scaler the
# prior variance of 0.1 means something else: on raw pixel values (0 to 16) a weight
# moves a logit up to 16 times as far, the predictions become over-confident and the
# log-loss explodes even where the accuracy is fair. Scaling as the stream goes fixes
# that.
for name in learners:
    print(f"{name:28s} accuracy {accuracy[name][1][-1]:.3f}  log-loss {loss[name][1][-1]:.3f}")
plt.show()
