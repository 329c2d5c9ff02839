"""Float32 matrix products keep float32 precision in every program of skbong.

On tensor-core GPUs XLA's default precision computes a float32 product in TensorFloat-32
(a 10-bit mantissa). On an NVIDIA H200 that left the dlr family's float32 conjugate
oracle (``test_conjugate.py``) off by 6.1e-4 against its tolerance of 1e-5, so every
program traces under ``jax.default_matmul_precision("highest")`` unless the user chose a
precision (:mod:`skbong.engine.program`). What reaches the device is read here from the
lowered programs, which name each product's precision on any backend: every
``dot_general`` and ``convolution`` must say HIGHEST by default, and must say what the
user asked for when they asked. A missing context (the plain ``jax.jit``) lowers to
DEFAULT and fails the first tests; a context that overrides the user fails the second.
"""

import ast
import pathlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _programs import stream_setup

import skbong
from skbong import engine as E
from skbong.engine.families import merging

F32 = np.float32
ROOT = pathlib.Path(skbong.__file__).parent


def _conv_init(key, n_features, n_outputs):
    k1, k2 = jax.random.split(key)
    return {"k": jax.random.normal(k1, (3, 3, 1, 2)) / 3.0,
            "w": jax.random.normal(k2, (2 * n_features, n_outputs)) / 4.0}


def _conv_apply(params, x):
    """A convolution over the features (as a 4 × 4 image) then a dense layer."""
    side = int(np.sqrt(x.shape[1]))
    h = jax.lax.conv_general_dilated(x.reshape(-1, side, side, 1), params["k"], (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jnp.tanh(h).reshape(x.shape[0], -1) @ params["w"]


def _lowered():
    """Lowered text of the programs an estimator runs: a dlr stream over a user CNN, a
    full-covariance stream, the sampled and moment predictives, the draws and a merge."""
    cnn = E.UserModel(_conv_init, _conv_apply, 16, 3)
    cfg, state, mean0, hyper, x, y, w = stream_setup("dlr", cnn)
    key = jax.random.PRNGKey(0)
    yield "dlr stream, CNN", E.run_stream_checked.lower(cfg, state, mean0, hyper, x, y, w, 0, key)
    yield "linmc log-proba", E.predict_log_proba.lower(cfg, state, x[:, 0], key, "linmc", 4)
    yield "draws", E.draw_parameters.lower(cfg, state, key, 4)
    mlp = E.MLP(4, 1, (3,), "tanh")
    cfg, state, mean0, hyper, x, y, w = stream_setup("full", mlp, "gaussian")
    yield "full stream, MLP", E.run_stream_checked.lower(cfg, state, mean0, hyper, x, y, w, 0, key)
    yield "moments", E.predict_moments.lower(cfg, state, hyper, x[:, 0], key, "linmc", 4)
    diag, factor = np.ones(6, F32), np.ones((6, 2), F32)
    yield "merge solve", merging._woodbury_solve.lower(diag, factor, np.ones(6, F32))


def _products(lowered):
    text = lowered.as_text()
    return [line for line in text.splitlines()
            if "stablehlo.dot_general" in line or "stablehlo.convolution" in line]


@pytest.mark.parametrize("user", [None, "tensorfloat32"])
def test_every_product_has_the_chosen_precision(user):
    want = {None: "HIGHEST", "tensorfloat32": "HIGH"}[user]
    kinds = set()
    with jax.default_matmul_precision(user):
        for name, lowered in _lowered():
            products = _products(lowered)
            assert products, f"{name}: no matrix product found; the check would be vacuous"
            for line in products:
                kinds.add("convolution" if "convolution" in line else "dot")
                named = re.findall(r"\b(DEFAULT|HIGHEST|HIGH)\b", line)  # one per operand
                assert named == [want, want], f"{name}: {line.strip()[:200]}"
    assert kinds == {"dot", "convolution"}
    assert jax.config.jax_default_matmul_precision is None  # nothing left changed


def test_every_compiled_function_is_a_program():
    # A new ``jax.jit`` would compile without the precision context: every jit in the
    # package must go through ``skbong.engine.program``.
    found = []
    for path in ROOT.rglob("*.py"):
        if path.name == "program.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("jit", "pjit"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and any(a.name in ("jit", "pjit") for a in node.names):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found


def test_fit_leaves_the_precision_setting_alone():
    from skbong import BongRegressor

    X = np.linspace(-1, 1, 20).reshape(10, 2)
    BongRegressor(family="dlr", rank=1).fit(X, X[:, 0])
    assert jax.config.jax_default_matmul_precision is None
