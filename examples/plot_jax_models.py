r"""
A flax or equinox network as the model
======================================

A network written with `flax <https://flax.readthedocs.io>`_ or `equinox
<https://docs.kidger.site/equinox/>`_ is given to an estimator through
:mod:`skbong.adapters` (``pip install "skbong[jax-nn]"``): the network's own
initialiser gives the prior mean, its parameters are flattened into :math:`\theta`, and
everything else the estimator does is unchanged. Here a small convolutional network
reads scikit-learn's 8×8 digit images as they arrive, in batches, with
:class:`~skbong.BongClassifier` (diagonal-plus-low-rank belief, BONG, LIN-HESS): we
follow its accuracy on each batch before it learns from it, and check how well
calibrated its probabilities are on held-out images.
"""

# %%
# The network
# -----------
# One 3×3 convolution with 8 channels, ReLU, 2×2 average pooling, and a dense layer to
# the 10 logits: :math:`P = 1370` parameters. flax's layers take channels-last images,
# so ``input_shape=(8, 8, 1)`` tells the adapter how to reshape a row of 64 pixels.
import time

import flax.linen as nn
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from skbong import BongClassifier
from skbong.adapters import from_flax
from skbong.metrics import expected_calibration_error
from skbong.plotting import plot_reliability


class CNN(nn.Module):
    n_classes: int = 10

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(8, (3, 3))(x))
        x = nn.avg_pool(x, (2, 2), strides=(2, 2))
        return nn.Dense(self.n_classes)(x.reshape(x.shape[0], -1))


digits = load_digits()
X, y = digits.data / 16.0, digits.target
rng = np.random.default_rng(0)
order = rng.permutation(len(X))
X_stream, y_stream = X[order[:1300]], y[order[:1300]]
X_test, y_test = X[order[1300:]], y[order[1300:]]

clf = BongClassifier(model=from_flax(CNN(), input_shape=(8, 8, 1)), random_state=0)

# %%
# Predict, then learn, 50 images at a time
# ----------------------------------------
# Each batch is scored before ``partial_fit`` learns from it, so every accuracy is on
# images the network had not seen. One pass, no epochs; the first call names the
# classes.
start = time.perf_counter()
seen, accuracy, log_loss = [], [], []
for lo in range(0, len(X_stream), 50):
    xb, yb = X_stream[lo : lo + 50], y_stream[lo : lo + 50]
    if lo > 0:
        proba = clf.predict_proba(xb)
        seen.append(lo)
        accuracy.append(np.mean(clf.classes_[proba.argmax(axis=1)] == yb))
        log_loss.append(-np.mean(np.log(proba[np.arange(len(yb)), yb])))
    clf.partial_fit(xb, yb, classes=np.arange(10))
seconds = time.perf_counter() - start
print(
    f"{len(X_stream)} images streamed in {seconds:.1f} s (compilation included), "
    f"P = {clf.n_params_} parameters"
)

fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
axes[0].plot(seen, accuracy, "o-", label="accuracy")
axes[0].plot(seen, log_loss, "s-", label="log-loss")
axes[0].set_xlabel("images learned from")
axes[0].set_title("each batch, before learning from it")
axes[0].legend()

# %%
# Calibration on held-out images
# ------------------------------
# The plug-in predictive (the classifier's default) uses the network at the posterior
# mean; the linearised one (``"linmc"``) averages the probabilities over the posterior. After one
# pass both are right more often than their confidence says (points above the
# diagonal: under-confident), the linearised one more so, since averaging over a
# posterior still wide in the directions the images have not pinned down flattens the
# probabilities. :ref:`sphx_glr_auto_examples_plot_calibration.py` compares the
# predictives further.
for predictive in ["plugin", "linmc"]:
    proba = clf.set_params(predictive=predictive).predict_proba(X_test)
    plot_reliability(y_test, proba, ax=axes[1], label=predictive)
    acc = np.mean(clf.classes_[proba.argmax(axis=1)] == y_test)
    ece = expected_calibration_error(y_test, proba)
    print(f"{predictive:>7s}: held-out accuracy {acc:.3f}, ECE {ece:.3f}")
axes[1].set_title("reliability on held-out images")
fig.tight_layout()

# %%
# The same network in equinox, or flax nnx
# -----------------------------------------
# An equinox module takes one example at a time, channels first; the adapter maps it
# over the rows. nnx and equinox modules are built already initialised, so the module
# as built is the prior mean (for linen, ``module.init`` draws it from
# ``random_state``). A network given directly as ``model=`` is wrapped the same way,
# with its rows as they come.
#
# .. code-block:: python
#
#     import equinox as eqx
#     from skbong.adapters import from_equinox
#
#     class EqxCNN(eqx.Module):
#         conv: eqx.nn.Conv2d
#         dense: eqx.nn.Linear
#
#         def __init__(self, key):
#             k1, k2 = jax.random.split(key)
#             self.conv = eqx.nn.Conv2d(1, 8, 3, padding=1, key=k1)
#             self.dense = eqx.nn.Linear(128, 10, key=k2)
#
#         def __call__(self, x):  # one image, (1, 8, 8)
#             x = jax.nn.relu(self.conv(x))
#             x = x.reshape(8, 4, 2, 4, 2).mean(axis=(2, 4))
#             return self.dense(x.reshape(-1))
#
#     model = from_equinox(EqxCNN(jax.random.PRNGKey(0)), input_shape=(1, 8, 8))
#     clf = BongClassifier(model=model).fit(X_stream, y_stream)
plt.show()
