"""Hand-made mutants of skbong, each run against the tests that claim to catch it.

Usage::

    python tools/mutate.py                  # every mutant
    python tools/mutate.py --only NAME ...  # some of them (names as in the table)
    python tools/mutate.py --list           # names and descriptions, nothing run
    python tools/mutate.py --no-baseline    # skip the unmutated run of the selections

The repository's working tree (without ``.git``, build outputs and caches) is copied
once to a temporary directory; nothing in the working tree is ever written. For each
mutant the copy's file is rewritten with the mutation, the named tests run there
(``python -m pytest -x -q`` with ``PYTHONPATH`` pointing at the copy, so the copy's
``skbong`` is imported, not the installed one), and the file is restored.

A mutant is *killed* when its tests fail (pytest exit status 1, or an error while
collecting them), and *survives* when they pass. Before anything runs:

* every mutant's original snippet must occur exactly once in its file (a stale mutant,
  whose snippet the code no longer contains, fails loudly instead of "surviving"), and
  the replacement must differ from it;
* unless ``--no-baseline``, each distinct test selection is run once on the unmutated
  copy and must pass (otherwise "killed" would mean nothing);
* a selection that collects no test is an error.

Prints one line per mutant (killed / SURVIVED, seconds) and exits with status 1 if any
mutant survived or any check failed.

Each mutant names the test file that claims the behaviour (with ``-k`` or a node id to
keep the run short): the point is that *that* file fails, not that something somewhere
does. Add a mutant here with every test written to kill one.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IGNORE = shutil.ignore_patterns(
    ".git",
    "_build",
    "auto_examples",
    "gen_modules",
    "generated",
    "_generated",
    "results",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    ".ruff_cache",
    "*.egg-info",
    ".venv",
    ".ci-venv",
    "*.png",
)


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str  # relative to the repository root
    old: str  # must occur exactly once in the file
    new: str
    tests: tuple  # pytest arguments: files, node ids, ``-k`` expressions
    desc: str


MUTANTS = [
    # ------------------------------------------------------ skbong/engine/linalg.py
    Mutant(
        "stacked-grams-swapped",
        "skbong/engine/linalg.py",
        "        return both[:, :k], eye + both[:, k:], scaled",
        "        return both[:, k:], eye + both[:, :k], scaled",
        ("tests/test_linalg.py", "-k", "stack"),
        "the stacked product's halves taken for each other: Gram and Woodbury matrices swapped",
    ),
    Mutant(
        "dlr-solve-refinement-dropped",
        "skbong/engine/linalg.py",
        "    return x + ((inv.T @ (inv @ e)) @ rows) / prec_diag",
        "    return x + 0.0 * e.sum()",
        ("tests/test_linalg.py", "-k", "refinement"),
        "the dlr solve returns its first iterate, without the refinement step",
    ),
    Mutant(
        "dlr-solve-refinement-residual-split",
        "skbong/engine/linalg.py",
        "    e = coef - y - x @ rows.T",
        "    e = coef - y",
        ("tests/test_linalg.py", "-k", "refinement"),
        "the refinement's residual loses its W̃ᵀ x term",
    ),
    Mutant(
        "dlr-solve-refines-long-rows",
        "skbong/engine/linalg.py",
        "    if rows.shape[1] >= REFINE_BELOW:",
        "    if rows.shape[1] >= 1000 * REFINE_BELOW:",
        ("tests/test_linalg.py", "-k", "refinement"),
        "the dlr solve refines at every P, where a length-P float32 residual rounds worse",
    ),
    Mutant(
        "dlr-tall-inner-scaled-twice",
        "skbong/engine/linalg.py",
        "        white = rows.T * jax.lax.rsqrt(prec_diag)[:, None]",
        "        white = rows.T / prec_diag[:, None]",
        ("tests/test_combinations.py", "-k", "both_layouts"),
        "the P-major inner matrix is W̃ᵀ Υ⁻² W̃ (whitened by Υ⁻¹ instead of Υ^(−1/2))",
    ),
    Mutant(
        "gpu-eigh-left-to-jacobi",
        "skbong/engine/linalg.py",
        "        a, cuda=_qr_eigh, default=lambda a: tuple(jnp.linalg.eigh(a))",
        "        a, default=lambda a: tuple(jnp.linalg.eigh(a))",
        ("tests/test_linalg.py", "-k", "qr_eigensolver"),
        "GPU programs leave the small eigendecompositions to cuSOLVER's slower Jacobi solver",
    ),
    Mutant(
        "qr-eigh-vectors-first",
        "skbong/engine/linalg.py",
        "    return vals, vecs\n",
        "    return vecs, vals\n",
        ("tests/test_linalg.py", "-k", "qr_eigensolver"),
        "the GPU branch of eigh returns the eigenvectors where the values belong",
    ),
    Mutant(
        "dropped-mass-top-directions",
        "skbong/engine/linalg.py",
        "    tail = vecs[:, : k - rank].T @ rows  # eigh's order is ascending",
        "    tail = vecs[:, rank:].T @ rows",
        ("tests/test_linalg.py", "-k", "separate"),
        "the separate projection drops the top directions' mass instead of the bottom ones'",
    ),
    Mutant(
        "dlr-solve-push-multiplies",
        "skbong/engine/linalg.py",
        "    x = (y @ rows) / prec_diag",
        "    x = (y @ rows) * prec_diag",
        ("tests/test_linalg.py", "-k", "dlr_solve"),
        "the dlr solve's Υ⁻¹ W̃ y multiplies by Υ where it must divide",
    ),
    Mutant(
        "tall-head-smallest-directions",
        "skbong/engine/linalg.py",
        "    head = (rows.T @ vecs[:, ::-1][:, : min(rank, k)]).T",
        "    head = (rows.T @ vecs[:, : min(rank, k)]).T",
        ("tests/test_linalg.py", "-k", "separate"),
        "the P-major head keeps the R smallest directions of W̃ W̃ᵀ instead of the largest",
    ),
    # ----------------------------------------------- skbong/engine/families/base.py
    Mutant(
        "validity-floor",
        "skbong/engine/families/base.py",
        "jnp.where(a > 0, a * 0, jnp.nan)",
        "jnp.where(a > 1e-6, a * 0, jnp.nan)",
        ("tests/test_faults.py", "-k", "engine_fault_matrix"),
        "is_valid refuses variances below 1e-6 (a sound belief under a small prior refused)",
    ),
    # ------------------------------------------- skbong/engine/families/gaussian.py
    Mutant(
        "kl-dropped-full-diag",
        "skbong/engine/families/gaussian.py",
        "    if prior is None:\n        return g, curv\n",
        "    if True:\n        return g, curv\n",
        ("tests/test_oracle.py", "-k", "inner_step"),
        "full / diag families: no KL term in g̃ and G̃ (BLR, BBB = BONG, BOG repeated)",
    ),
    Mutant(
        "kl-curvature-summed-left-to-right",
        "skbong/engine/families/gaussian.py",
        "    g_curv = alg.explicit(curv) + (alg.inv(state.cov) - prec0)\n",
        "    g_curv = alg.explicit(curv) - prec0 + alg.inv(state.cov)\n",
        ("tests/test_faults.py", "-k", "tiny_prior"),
        "the KL curvature summed (G - L0) + L, losing G next to L0 = 1e8 in float32",
    ),
    # ----------------------------------------------- skbong/engine/families/full.py
    Mutant(
        "spd-check-disabled",
        "skbong/engine/families/full.py",
        "    return info == 0 and bool(np.all(np.isfinite(np.diagonal(chol))))\n",
        "    return True\n",
        ("tests/test_faults.py", "-k", "indefinite"),
        "the estimator's once-per-call Cholesky check accepts any dense covariance",
    ),
    Mutant(
        "full-sampler-transposed-root",
        "skbong/engine/families/full.py",
        "return state.mean + eps @ chol.T",
        "return state.mean + eps @ chol",
        ("tests/test_oracle.py", "-k", "mc_estimators and full"),
        "full sampler θ = μ + Lᵀ ε (covariance LᵀL ≠ Σ)",
    ),
    Mutant(
        "full-checked-on-the-host",
        "skbong/engine/families/full.py",
        "        end_check=_cholesky_succeeds,\n",
        "",
        ("tests/test_faults.py", "-k", "checked_once"),
        "the full family's Cholesky check runs on the host, a second pass over the belief per call",
    ),
    Mutant(
        "bank-in-turn-shares-the-first-drift",
        "skbong/engine/filter/stream.py",
        "            per_filter[\"drift\"] = hyper.drift\n",
        "            per_filter[\"drift\"] = jnp.broadcast_to(hyper.drift[0], hyper.drift.shape)\n",
        ("tests/test_stream.py", "-k", "streamed_alone"),
        "a bank that runs its filters in turn gives each the first filter's drift",
    ),
    Mutant(
        "bank-in-turn-mixes-the-priors",
        "skbong/engine/filter/stream.py",
        "        per_filter = {\"prior_var\": hyper.prior_var}\n",
        "        per_filter = {\"prior_var\": hyper.prior_var[::-1]}\n",
        ("tests/test_stream.py", "-k", "streamed_alone"),
        "a bank that runs its filters in turn pairs each belief with another's prior variance",
    ),
    Mutant(
        "shared-sigma-j-without-scale",
        "skbong/engine/families/full.py",
        "sb, cov_rest = (cov @ curv.jac[0]) * curv.scale[0], None",
        "sb, cov_rest = cov @ curv.jac[0], None",
        ("tests/test_conjugate.py",),
        "the shared Σ j of one Gaussian row not scaled to Σ b (b = j / √R)",
    ),
    Mutant(
        "shared-output-cov-of-another-row",
        "skbong/engine/families/full.py",
        "        return (row @ (state.cov @ row)).reshape(1, 1, 1)",
        "        return (row @ (state.cov @ (row + 1.0))).reshape(1, 1, 1)",
        ("tests/test_drift_bank.py", "-k", "weighted_by_their_evidence"),
        "the one-row output covariance jᵀ Σ j computed against another vector",
    ),
    Mutant(
        "sigma-rows-swapped",
        "skbong/engine/families/full.py",
        "    return rows[0], rows[1]",
        "    return rows[1], rows[0]",
        ("tests/test_checked_step.py", "-k", "natural_step"),
        "the full step's rows product returns Σ r for Σ b and back (P ≥ ROWS_FROM)",
    ),
    Mutant(
        "sigma-rows-never",
        "skbong/engine/families/full.py",
        "    if b.shape[0] < ROWS_FROM:",
        "    if True:",
        ("tests/test_checked_step.py", "-k", "product_form"),
        "the full step keeps two matrix-vector products at P ≥ 80, 20-30 % slower there",
    ),
    Mutant(
        "checked-step-without-rest-drops-u",
        "skbong/engine/families/full.py",
        "        mean = state.mean + h * (inv_root * coef[0])",
        "        mean = state.mean + h * inv_root",
        ("tests/test_checked_step.py", "-k", "without_rest"),
        "the full step without r moves the mean by Σ' b instead of Σ' b u",
    ),
    Mutant(
        "checked-noise-scale-not-written",
        "skbong/engine/families/full.py",
        "        cov_new = cov_new * ratio",
        "        cov_new = cov_new * 1.0",
        ("tests/test_checked_step.py", "-k", "scaled or learned_noise"),
        "the full checked step with learned noise does not rescale Σ' by ŝ' / ŝ",
    ),
    Mutant(
        "checked-noise-scaled-margin-dropped",
        "skbong/engine/families/full.py",
        "        positive += (ratio * (left - info.eps * diag) - 4 * info.tiny,)",
        "        positive += ()",
        ("tests/test_checked_step.py", "-k", "scaled_certificate"),
        "the full certificate does not check the rescaled variances (a small c flushes them)",
    ),
    Mutant(
        "checked-noise-bound-not-scaled",
        "skbong/engine/families/full.py",
        "        new_bound = ratio * new_bound * (1 + 2 * info.eps)",
        "        new_bound = new_bound * (1 + 2 * info.eps)",
        ("tests/test_checked_step.py", "-k", "scaled_certificate"),
        "the full certificate bounds Σ' but writes c Σ' (a large c overflows it)",
    ),
    # ------------------------------------------------ skbong/engine/families/dlr.py
    Mutant(
        "dlr-marginal-var-sign",
        "skbong/engine/families/dlr.py",
        "return 1.0 / state.prec_diag - jnp.sum(root * root, axis=1)",
        "return 1.0 / state.prec_diag + jnp.sum(root * root, axis=1)",
        ("tests/test_linalg.py", "-k", "dlr_family"),
        "dlr marginal variance 1/Υ + ‖V‖² (sign of the low-rank term flipped)",
    ),
    Mutant(
        "dlr-posterior-var-sign",
        "skbong/engine/families/dlr.py",
        "return 1.0 / state.prec_diag - jnp.sum(root * root, axis=1)",
        "return 1.0 / state.prec_diag + jnp.sum(root * root, axis=1)",
        ("tests/test_estimators.py", "-k", "posterior_var_dlr"),
        "the same flip, seen through BongRegressor.posterior_var_",
    ),
    Mutant(
        "kl-dropped-dlr-natural-mean",
        "skbong/engine/families/dlr.py",
        "        rest = _kl_gradient(state, prior, 0.0 if rest is None else rest)\n",
        "",
        ("tests/test_oracle.py", "-k", "inner_step"),
        "dlr natural step: the KL gradient −Λ₀(μ − μ₀) left out of the mean step",
    ),
    Mutant(
        "kl-dropped-dlr-plain-mean",
        "skbong/engine/families/dlr.py",
        "        g = _kl_gradient(state, prior, g)\n",
        "",
        ("tests/test_oracle.py", "-k", "inner_step"),
        "dlr plain-gradient step: the KL gradient left out of the mean step",
    ),
    Mutant(
        "dlr-valid-needs-positive-w",
        "skbong/engine/families/dlr.py",
        "return finite_and_positive((state.mean, state.prec_lr), positive=(state.prec_diag,))",
        "return finite_and_positive((state.mean,), positive=(state.prec_diag, state.prec_lr))",
        ("tests/test_faults.py", "-k", "engine_fault_matrix"),
        "dlr is_valid also demands W > 0 (clean rows refused)",
    ),
    Mutant(
        "dlr-soundness-too-strict",
        "skbong/engine/families/dlr.py",
        "    end_check=lambda state: _min_variance(state.prec_diag, state.prec_lr) > 0,",
        "    end_check=lambda state: _min_variance(state.prec_diag, state.prec_lr) > 1e-6,",
        ("tests/test_faults.py", "-k", "extreme_prior"),
        "the estimator's dlr soundness check refuses small but positive variances",
    ),
    Mutant(
        "dlr-output-cov-sign",
        "skbong/engine/families/dlr.py",
        'jac, 1.0 / state.prec_diag, jac) - jnp.einsum(',
        'jac, 1.0 / state.prec_diag, jac) + jnp.einsum(',
        ("tests/test_linalg.py", "-k", "dlr_family"),
        "dlr J Σ Jᵀ with the low-rank term added instead of subtracted",
    ),
    Mutant(
        "dlr-sampler-root-squared",
        "skbong/engine/families/dlr.py",
        "    m = (vecs * (-1.0 / (root * (1.0 + root)))[None, :]) @ vecs.T",
        "    m = (vecs * (-1.0 / (root * root))[None, :]) @ vecs.T",
        ("tests/test_oracle.py", "-k", "mc_estimators and dlr"),
        "dlr sampler scales by (I + A Aᵀ)⁻¹ instead of its square root (MC-EF draws too narrow)",
    ),
    Mutant(
        "dlr-sampler-root-squared-linalg",
        "skbong/engine/families/dlr.py",
        "    m = (vecs * (-1.0 / (root * (1.0 + root)))[None, :]) @ vecs.T",
        "    m = (vecs * (-1.0 / (root * root))[None, :]) @ vecs.T",
        ("tests/test_linalg.py", "-k", "dlr_family"),
        "the same sampler root, against the dense dlr test",
    ),
    Mutant(
        "dlr-host-check-second-program",
        "skbong/engine/families/dlr.py",
        "end_check=lambda state: _min_variance(state.prec_diag, state.prec_lr) > 0,",
        "end_check=None,",
        ("tests/test_cold_start.py", "-k", "second_process"),
        "the dlr soundness check leaves the stream program: a second program and a host "
        "round trip per call (killed through the program count the cold-start test pins)",
    ),
    Mutant(
        "dlr-end-check-passes-all",
        "skbong/engine/families/dlr.py",
        "end_check=lambda state: _min_variance(state.prec_diag, state.prec_lr) > 0,",
        "end_check=lambda state: _min_variance(state.prec_diag, state.prec_lr) > -jnp.inf,",
        ("tests/test_faults.py",),
        "the in-program dlr soundness check passes beliefs with cancelled variances",
    ),
    Mutant(
        "dlr-checked-ignores-mean",
        "skbong/engine/families/dlr.py",
        "        finite_and_positive((mean,), positive=(new_diag,))",
        "        finite_and_positive((), positive=(new_diag,))",
        ("tests/test_checked_step.py", "-k", "dlr"),
        "the dlr certificate forgets the mean: a non-finite gradient is written",
    ),
    Mutant(
        "dlr-checked-keeps-new-factor",
        "skbong/engine/families/dlr.py",
        "    factor = jax.lax.cond(take, lambda: head.T, lambda: state.prec_lr)",
        "    factor = head.T",
        ("tests/test_checked_step.py", "-k", "dlr"),
        "a refused dlr step still writes its new factor W'",
    ),
    Mutant(
        "dlr-transform-wrong-root",
        "skbong/engine/families/dlr.py",
        "    m = (vecs * (-1.0 / (root * (1.0 + root)))[None, :]) @ vecs.T",
        "    m = (vecs * (-0.5 / root)[None, :]) @ vecs.T",
        ("tests/test_linalg.py",),
        "dlr draws with a square root that is not Σ's (first-order g(λ))",
    ),
    Mutant(
        "grams-never-stacked",
        "skbong/engine/families/dlr.py",
        "    gram, inner, _ = dlr_grams(prec_diag, rows, tall, stacked=rows.shape[0] in STACKED_COLUMNS)",
        "    gram, inner, _ = dlr_grams(prec_diag, rows, tall)",
        ("tests/test_linalg.py", "-k", "stack"),
        "the natural step keeps two k × k products where one k × 2k product was measured faster",
    ),
    Mutant(
        "checked-noise-dlr-diag-not-scaled",
        "skbong/engine/families/dlr.py",
        "        _, new_diag, head = scale(DLRState(mean, new_diag, head), ratio)",
        "        head = scale(DLRState(mean, new_diag, head), ratio).prec_lr",
        ("tests/test_checked_step.py", "-k", "scaled or learned_noise"),
        "the dlr checked step with learned noise rescales W but not Υ",
    ),
    # ------------------------------------------------- skbong/engine/likelihoods.py
    Mutant(
        "poisson-linmc-plugin-mean",
        "skbong/engine/likelihoods.py",
        "    rate = jnp.exp(m + 0.5 * v)\n",
        "    rate = jnp.exp(m)\n",
        ("tests/test_poisson.py", "-k", "closed_forms"),
        "the Poisson linmc mean without the log-normal v/2 (the plug-in rate)",
    ),
    Mutant(
        "bernoulli-classes-swapped",
        "skbong/engine/likelihoods.py",
        "    return jnp.concatenate([-soft - jnp.maximum(f, 0.0), -soft - jnp.maximum(-f, 0.0)], axis=-1)",
        "    return jnp.concatenate([-soft - jnp.maximum(-f, 0.0), -soft - jnp.maximum(f, 0.0)], axis=-1)",
        ("tests/test_predictive.py",),
        "the Bernoulli class log-probabilities in the wrong columns",
    ),
    Mutant(
        "split-exact-bernoulli",
        "skbong/engine/likelihoods.py",
        """        _bern_coef,
        jax.nn.sigmoid,
""",
        """        _bern_coef,
        jax.nn.sigmoid,
        split_exact=True,
""",
        ("tests/test_split.py",),
        "a saturated classifier row's gradient, kept in r, is dropped with r",
    ),
    Mutant(
        "split-exact-never",
        "skbong/engine/likelihoods.py",
        "        split_exact=True,",
        "        split_exact=False,",
        ("tests/test_split.py",),
        "the Gaussian LIN-HESS step keeps its products with r = 0 (22 % of full at P = 100)",
    ),
    Mutant(
        "conjugate-ignores-dof",
        "skbong/engine/likelihoods.py",
        '        return self.additive_noise and self.obs_dof == float("inf")\n',
        "        return self.additive_noise\n",
        ("tests/test_student_t.py", "tests/test_merge.py"),
        "the Student-t counted conjugate: its rows take the Gaussian's closed forms",
    ),
    # ----------------------------------------------------------- skbong/engine/config.py
    Mutant(
        "kalman-step-any-estimator",
        "skbong/engine/config.py",
        " and self.hessian in LINEAR_GAUSSIAN_EXACT\n",
        "\n",
        ("tests/test_conjugate_bank.py", "tests/test_refine.py"),
        "BONG with any curvature estimator counted the Kalman step (closed-form bank, refine)",
    ),
    # --------------------------------------------------- skbong/engine/filter/curvature.py
    Mutant(
        "split-exact-zeroes-overflowed-u",
        "skbong/engine/filter/curvature.py",
        "        coef = coef.reshape(-1)\n        shared = {}",
        "        coef = jnp.where(jnp.isfinite(coef), coef, 0.0).reshape(-1)\n        shared = {}",
        ("tests/test_split.py", "-k", "refused"),
        "a Gaussian row whose u overflows updates the covariance and is accepted",
    ),
    Mutant(
        "refine-expansion-sign",
        "skbong/engine/filter/curvature.py",
        "coef = coef - (rows @ (state.mean - point)).reshape(coef.shape)",
        "coef = coef + (rows @ (state.mean - point)).reshape(coef.shape)",
        ("tests/test_refine.py", "-k", "expansion_about_it"),
        "LIN-HESS about a point θ̄: the expansion's correction −√wᵢ Sᵢᵀ Jᵢ (μ − θ̄) added",
    ),
    # ------------------------------------------------------- skbong/engine/filter/rules.py
    Mutant(
        "blr-without-kl",
        "skbong/engine/filter/rules.py",
        "    prior = predicted if rule.kl else None\n",
        "    prior = None\n",
        ("tests/test_oracle.py", "-k", "inner_step"),
        "BLR / BBB steps without the KL term of the online ELBO (inner steps kept)",
    ),
    Mutant(
        "blr-one-inner-step",
        "skbong/engine/filter/rules.py",
        '    "blr": Rule(natural=True, kl=True, unit_rate=False),\n',
        '    "blr": Rule(natural=True, kl=False, unit_rate=False),\n',
        ("tests/test_oracle.py", "-k", "inner_step"),
        "BLR as a single natural step at rate α without KL (BONG at rate α)",
    ),
    Mutant(
        "overshoot-guard-off",
        "skbong/engine/filter/rules.py",
        "        return _row_log_lik(config, new.mean, x, y, w, obs_var) >= start - slack\n",
        "        return jnp.asarray(True)\n",
        ("tests/test_poisson.py", "-k", "guard"),
        "the overshoot line search accepts every step",
    ),
    # -------------------------------------------- skbong/engine/solvers/posterior.py
    Mutant(
        "m-step-second-moment-no-variance",
        "skbong/engine/solvers/posterior.py",
        "    return posterior.mean * posterior.mean + marginal_variances(posterior)",
        "    return posterior.mean * posterior.mean",
        ("tests/test_variational_defaults.py", "-k", "m_step_of_the_final_posterior"),
        "the M-step's E_q[θⱼ²] = μⱼ² + Σⱼⱼ without Σⱼⱼ (the learned prior too narrow)",
    ),
    # -------------------------------------------------- skbong/engine/predictive.py
    Mutant(
        "log-proba-unnormalised",
        "skbong/engine/predictive.py",
        "    return jax.nn.logsumexp(logp, axis=0) - jnp.log(jnp.asarray(logp.shape[0], logp.dtype))\n",
        "    return jax.nn.logsumexp(logp, axis=0)\n",
        ("tests/test_faults.py", "-k", "class_seen_once"),
        "predict_log_proba sums the S sample probabilities instead of averaging them "
        "(predict_proba's division by its row sum hides it)",
    ),
    # ----------------------------------------------------- skbong/engine/program.py
    Mutant(
        "programs-at-default-precision",
        "skbong/engine/program.py",
        "        with jax.default_matmul_precision(PRECISION):",
        "        with jax.default_matmul_precision(None):",
        ("tests/test_precision.py",),
        "the programs trace at XLA's default precision (TensorFloat-32 products on tensor-core GPUs)",
    ),
    Mutant(
        "programs-override-the-user",
        "skbong/engine/program.py",
        "        if jax.config.jax_default_matmul_precision is not None:",
        "        if False:",
        ("tests/test_precision.py",),
        "a precision the user chose is replaced by skbong's",
    ),
    # ------------------------------------------------------ skbong/engine/filter/stream.py
    Mutant(
        "zero-input-is-padding",
        "skbong/engine/filter/stream.py",
        "    active = jnp.any(w != 0)  # all-zero weights are padding; a NaN weight is not (refused)",
        "    active = jnp.any(w != 0) & jnp.any(x != 0)",
        ("tests/test_faults.py", "-k", "engine_fault_matrix"),
        "a row of zero inputs is skipped like padding (the intercept learns nothing)",
    ),
    Mutant(
        "refuse-large-inputs",
        "skbong/engine/filter/stream.py",
        "        ok = family.is_valid(new)\n",
        "        ok = family.is_valid(new) & jnp.all(jnp.abs(x) < 1e3)\n",
        ("tests/test_faults.py", "-k", "engine_fault_matrix"),
        "the stream refuses every row with |x| ≥ 1e3, even where the update is sound",
    ),
    Mutant(
        "pit-plugin-scale",
        "skbong/engine/filter/stream.py",
        '    scale2 = _scale2(config, family, belief, x, f, obs_var, config.pit == "linmc")',
        "    scale2 = _scale2(config, family, belief, x, f, obs_var, False)",
        ("tests/test_calibration.py",),
        "the stream's PIT leaves the parameter uncertainty out of the predictive",
    ),
    Mutant(
        "pit-after-drift-step",
        "skbong/engine/filter/stream.py",
        "        f_now = config.model.apply(belief.mean, x) if config.dynamic else f\n"
        "        out = _residual(config, family, belief, x, y, f_now, hyper.obs_var)",
        "        out = _residual(config, family, predicted, x, y, f, hyper.obs_var)",
        ("tests/test_calibration.py",),
        "the prequential PIT is taken under the drifted belief, not the one predict_interval serves",
    ),
    Mutant(
        "drift-bank-shares-one-drift",
        "skbong/engine/filter/stream.py",
        "        drift=0 if jnp.ndim(hyper.drift) else None,",
        "        drift=None,",
        ("tests/test_drift_bank.py",),
        "every filter of the drift bank runs the drifts of all (vmap shares the vector)",
    ),
    Mutant(
        "end-check-on-every-chunk",
        "skbong/engine/filter/stream.py",
        "        final = (last,) if checked else ()",
        "        final = (True,) if checked else ()",
        ("tests/test_faults.py", "-k", "checked_once"),
        "every chunk of a call pays the end check, not only its last",
    ),
    Mutant(
        "end-check-never-on-the-last-chunk",
        "skbong/engine/filter/stream.py",
        "        final = (last,) if checked else ()",
        "        final = (False,) if checked else ()",
        ("tests/test_faults.py", "-k", "checked_once or definite or cancelled"),
        "the belief's end check never runs: an indefinite Σ or cancelled dlr variances are accepted",
    ),
    Mutant(
        "end-check-always-branches",
        "skbong/engine/filter/stream.py",
        "    if max(a.size for a in jax.tree_util.tree_leaves(belief)) < BRANCH_FROM:",
        "    if False:",
        ("tests/test_faults.py", "-k", "branches or checked_once"),
        "a small belief's stream program branches on final (a conditional, ~20 µs a call on XLA:CPU)",
    ),
    Mutant(
        "end-check-never-branches",
        "skbong/engine/filter/stream.py",
        "    if max(a.size for a in jax.tree_util.tree_leaves(belief)) < BRANCH_FROM:",
        "    if True:",
        ("tests/test_faults.py", "-k", "branches or checked_once"),
        "a large belief pays its O(P³) end check on every chunk of a call",
    ),
    Mutant(
        "stream-outputs-shifted",
        "skbong/engine/filter/stream.py",
        "    return state, out[..., 0], out[..., 1:], ok",
        "    return state, out[..., 1], out[..., 1:], ok",
        ("tests/test_noise.py", "-k", "evidence"),
        "the stream reports an output as the row's log-likelihood",
    ),
    Mutant(
        "checked-noise-refused-row-learns",
        "skbong/engine/filter/stream.py",
        "            new = (new, _select(keep & ok, new_noise, noise))",
        "            new = (new, new_noise)",
        ("tests/test_checked_step.py", "-k", "learned_noise"),
        "a refused row's noise update is kept on the checked path",
    ),
    Mutant(
        "stream-row-off-by-one",
        "skbong/engine/filter/stream.py",
        "        x, y, w = (_row(a, t) for a in (xs, ys, ws))",
        "        x, y, w = (_row(a, jnp.minimum(t + 1, xs.shape[0] - 1)) for a in (xs, ys, ws))",
        ("tests/test_conjugate.py",),
        "the stream learns from the next step's rows",
    ),
    Mutant(
        "fetch-early-skipped",
        "skbong/engine/filter/stream.py",
        "        _fetch_early((outs, flag, state if last else ()))",
        "        pass",
        ("tests/test_stream.py", "-k", "fetched"),
        "an accelerator's results are converted one transfer after another",
    ),
    Mutant(
        "fetch-early-on-cpu",
        "skbong/engine/filter/stream.py",
        'if jax.default_backend() != "cpu":',
        "if True:",
        ("tests/test_stream.py", "-k", "fetched"),
        "the CPU's results are asked for host copies too",
    ),
    Mutant(
        "fetch-early-every-belief",
        "skbong/engine/filter/stream.py",
        "state if last else ()",
        "state",
        ("tests/test_stream.py", "-k", "fetched"),
        "every chunk's belief is copied to the host, not only the call's last",
    ),
    # ---------------------------------------------------- skbong/engine/__init__.py
    Mutant(
        "a-plain-jit",
        "skbong/engine/__init__.py",
        "@program(static_argnames=(\"config\",))\ndef marginal_var",
        "@jax.jit\ndef marginal_var",
        ("tests/test_precision.py",),
        "a compiled function made by jax.jit, outside the precision context",
    ),
    # -------------------------------------------------------------- skbong/_online/base.py
    Mutant(
        "one-pass-prior-for-every-likelihood",
        "skbong/_online/base.py",
        "self._one_pass_prior = passes == 1 and not config.impl.likelihood.additive_noise",
        "self._one_pass_prior = passes == 1",
        ("tests/test_defaults.py", "-k", "auto_prior"),
        "a regressor network's partial_fit takes the narrower one-pass prior too",
    ),
    Mutant(
        "getstate-resets-step-counter",
        "skbong/_online/base.py",
        "    def _poor_score(self):\n",
        "    def __getstate__(self):\n"
        "        state = super().__getstate__()\n"
        "        state['_n_steps'] = 0\n"
        "        return state\n\n"
        "    def _poor_score(self):\n",
        ("tests/test_checkpoint.py",),
        "pickling resets the step counter the MC keys are folded from",
    ),
    Mutant(
        "setstate-redraws-seed",
        "skbong/_online/base.py",
        "    def _poor_score(self):\n",
        "    def __setstate__(self, state):\n"
        "        super().__setstate__(state)\n"
        "        if '_seed' in state:\n"
        "            self._seed = int(\n"
        "                check_random_state(self.random_state).randint(np.iinfo(np.int32).max)\n"
        "            )\n\n"
        "    def _poor_score(self):\n",
        ("tests/test_checkpoint.py",),
        "unpickling redraws the seed from random_state",
    ),
    Mutant(
        "auto-swappable-after-fit",
        "skbong/_online/base.py",
        "        return structural_signature(self, STRUCTURAL) + banked",
        "        return structural_signature(self, STRUCTURAL)",
        ("tests/test_drift_bank.py::test_auto_cannot_be_swapped_for_a_number_after_a_fit",),
        "prior_variance or drift switched from 'auto' to a number after a fit reaches the bank's state",
    ),
    # ------------------------------------------------------------ skbong/_online/stream.py
    Mutant(
        "refined-bank-keeps-prequential-evidence",
        "skbong/_online/stream.py",
        "    if passes and est._log_evidence is not None:\n        _laplace_weights(",
        "    if False:\n        _laplace_weights(",
        ("tests/test_refine.py", "-k", "laplace_evidence or order_of_the_rows"),
        "a refined bank keeps the one pass's evidence, scored along the order of the rows",
    ),
    Mutant(
        "first-pass-halves-from-the-worse-start",
        "skbong/_online/stream.py",
        "    prior = np.where(np.maximum(*values) > best, values[1] > values[0], better_start)",
        "    prior = values[1] > values[0]",
        ("tests/test_refine.py", "-k", "halved_until_it_helps"),
        "where neither first step helps, the passes halve from a start worse than the other",
    ),
    Mutant(
        "refined-bank-streams-every-filter",
        "skbong/_online/stream.py",
        "    if est._log_evidence is None or not _refine_passes(est, config):\n        return False\n    n_rows",
        "    if True:\n        return False\n    n_rows",
        ("tests/test_refine.py", "-k", "streams_only_its_reference"),
        "a refined bank's fit streams every filter's one pass, not the reference's alone",
    ),
    Mutant(
        "reference-pass-forgets-its-rows",
        "skbong/_online/stream.py",
        "    est.n_observations_ += int(n_rows)\n    est._publish(config)\n    return True\n",
        "    est._publish(config)\n    return True\n",
        ("tests/test_refine.py", "-k", "streams_only_its_reference"),
        "the reference filter's pass does not count the rows it learned",
    ),
    Mutant(
        "reference-keeps-an-unusable-first-pass",
        "skbong/_online/stream.py",
        "        if reference and k == 0 and not ok.all():  # before the warning of an unusable pass\n            return False\n",
        "",
        ("tests/test_refine.py", "-k", "usable_belief"),
        "a bank whose filters' first further passes are all unusable stays at the reference's belief",
    ),
    Mutant(
        "reference-keeps-a-first-pass-that-did-not-help",
        "skbong/_online/stream.py",
        "        if reference and k == 0 and not better.all():\n            return False\n",
        "",
        ("tests/test_refine.py", "-k", "cannot_help"),
        "a filter whose first further pass raises nothing stays at the reference's belief",
    ),
    Mutant(
        "first-pass-from-the-one-pass-mean-only",
        "skbong/_online/stream.py",
        "    for start in (onepass, prior_mean):  # the bank's program, once per start",
        "    for start in (onepass, onepass):",
        ("tests/test_refine.py", "-k", "large_leverage"),
        "fit's first further pass starts from the one-pass mean only",
    ),
    Mutant(
        "refine-never-damps",
        "skbong/_online/stream.py",
        "REFINE_HALVINGS = 10\n",
        "REFINE_HALVINGS = 0\n",
        ("tests/test_refine.py", "-k", "halved_until_it_helps"),
        "a filter whose Newton pass overshot keeps its one-pass mean instead of a shorter step",
    ),
    Mutant(
        "retire-without-margin",
        "skbong/_online/stream.py",
        "            behind = active & sound & (evidence < best - bank_module.RETIRE_NATS)\n",
        "            behind = active & sound & (evidence < best)\n",
        ("tests/test_bank_retire.py",),
        "the bank keeps only the best filters at each check, however close the others",
    ),
    Mutant(
        "retired-filter-learns-on",
        "skbong/_online/stream.py",
        "        if idle.any():  # those the program ran (the whole bank, or padding) are undone\n",
        "        if False:\n",
        ("tests/test_bank_retire.py",),
        "a retired filter the whole bank's program runs keeps learning (and judging) rows",
    ),
    Mutant(
        "retired-filter-keeps-evidence",
        "skbong/_online/stream.py",
        "        path[np.arange(path.shape[1])[None, :] >= since[:, None]] = -np.inf  # retired filters\n",
        "",
        ("tests/test_bank_retire.py",),
        "a retired filter keeps its evidence, and its stale belief a weight in the mixture",
    ),
    Mutant(
        "outliers-gap-reversed",
        "skbong/_online/stream.py",
        "    rows = np.flatnonzero(keep & (gap > OUTLIER_GAP_NATS))",
        "    rows = np.flatnonzero(keep & (gap < OUTLIER_GAP_NATS))",
        ("tests/test_robustness.py", "-k", "outliers"),
        "the outlier warning counts the rows near the median instead of those far below it",
    ),
    Mutant(
        "outliers-judged-on-the-worst-filter",
        "skbong/_online/stream.py",
        "    best = 0 if conjugate else int(np.argmax(np.where(alive, evidence, -np.inf)))",
        "    best = 0 if conjugate else int(np.argmin(np.where(alive, evidence, np.inf)))",
        ("tests/test_robustness.py", "-k", "outliers"),
        "a streamed bank judges the rows by its filter of lowest evidence",
    ),
    Mutant(
        "bank-pit-weights-after-row",
        "skbong/_online/stream.py",
        "        pit = _calibration.mixture_pit(pits, path[:, :-1])",
        "        pit = _calibration.mixture_pit(pits, path[:, -1:] + 0 * path[:, :-1])",
        ("tests/test_calibration.py",),
        "the bank's PIT weighs its filters by the evidence after the call, not before each row",
    ),
    Mutant(
        "pit-network-not-discounted",
        "skbong/_online/stream.py",
        "        delta = _calibration.discount(config)",
        "        delta = 1.0",
        ("tests/test_calibration.py",),
        "a network's PIT histogram (calibration='prequential') keeps its early rows at full weight",
    ),
    Mutant(
        "loo-window-keeps-refused-rows",
        "skbong/_online/stream.py",
        "        keep = learned & (w > 0)",
        "        keep = w > 0",
        ("tests/test_calibration.py::test_loo_leaves_refused_rows_out",),
        "rows whose updates were refused are kept for the calibration",
    ),
    Mutant(
        "loo-stale-cache",
        "skbong/_online/stream.py",
        "    est._loo_cache = None\n",
        "",
        ("tests/test_calibration.py::test_loo_keeps_the_last_rows_it_learned",),
        "the leave-one-out histogram is not recomputed after an update",
    ),
    Mutant(
        "divergence-never-warns",
        "skbong/_online/stream.py",
        "    if not np.any(mse > DIVERGENCE_RATIO * base):",
        "    if True:",
        ("tests/test_errors.py::test_a_diverging_stream_warns_and_names_the_family",),
        "a diverging stream of finite updates passes silently",
    ),
    Mutant(
        "divergence-against-variance-only",
        "skbong/_online/stream.py",
        "    base = np.maximum(np.var(y, axis=0), np.mean(y**2, axis=0))",
        "    base = np.var(y, axis=0)",
        ("tests/test_errors.py::test_no_divergence_warning_for_short_calls_or_constant_targets",),
        "a constant target (variance 0) is diagnosed as diverging",
    ),
    Mutant(
        "divergence-any-call-length",
        "skbong/_online/stream.py",
        "    if n < DIVERGENCE_MIN_ROWS:\n        return\n    y, f = ",
        "    y, f = ",
        ("tests/test_errors.py::test_no_divergence_warning_for_short_calls_or_constant_targets",),
        "calls too short to judge are diagnosed",
    ),
    Mutant(
        "belief-memo-without-identity",
        "skbong/_online/stream.py",
        "    if memo is not None and memo[0] is belief[0] and memo[1] is belief[1]:",
        "    if memo is not None:",
        ("tests/test_estimators.py", "-k", "stale"),
        "a call is fed the JAX arrays of an earlier belief (a refit starts from the old posterior)",
    ),
    Mutant(
        "belief-memo-pickled",
        "skbong/_core/posterior.py",
        "        state = {k: v for k, v in state.items() if k not in _TRANSIENT}",
        "        state = dict(state)",
        ("tests/test_estimators.py", "-k", "no_jax"),
        "the memo's JAX arrays are pickled (float64 ones come back float32 without x64)",
    ),
    Mutant(
        "refine-keeps-no-filter",
        "skbong/_online/stream.py",
        "            np.where(better.reshape((-1,) + (1,) * (a.ndim - 1)), a, b).reshape(shape)\n",
        "            a.reshape(shape)\n",
        ("tests/test_refine.py", "-k", "each_filter_of_the_bank or not_kept"),
        "refine: a bank filter whose pass lowered its log posterior takes that pass anyway",
    ),
    Mutant(
        "tempered-weights-not-divided",
        "skbong/_online/stream.py",
        "    w = weights / passes\n",
        "    w = weights * 1.0\n",
        ("tests/test_passes.py", "-k", "conjugate_model"),
        "tempered passes learn every row at full weight in each pass: the data counted passes times",
    ),
    Mutant(
        "tempered-rows-counted-per-pass",
        "skbong/_online/stream.py",
        '    est.n_observations_ = fresh["n_observations_"] + n_rows\n',
        "",
        ("tests/test_passes.py", "-k", "conjugate_model"),
        "n_observations_ counts a fit's rows once per tempered pass",
    ),
    Mutant(
        "tempered-fallback-keeps-partial-passes",
        "skbong/_online/stream.py",
        "    est.__dict__.clear()\n    est.__dict__.update(fresh)\n    est._init_prior(config, 1)  # the prior for one pass (auto_prior)\n    learn(est, config, X, Y, sample_weight, obs_var)\n",
        "",
        ("tests/test_passes.py", "-k", "falls_back"),
        "a failed tempered pass leaves the belief of the passes before it (a fraction of the data's weight)",
    ),
    Mutant(
        "fallback-keeps-tempered-prior",
        "skbong/_online/stream.py",
        "    est._init_prior(config, 1)  # the prior for one pass (auto_prior)\n",
        "",
        ("tests/test_passes.py", "-k", "falls_back"),
        "a fit whose tempered passes fell back to one pass keeps the prior chosen for the passes",
    ),
    Mutant(
        "refused-rows-masked-by-multiplying",
        "skbong/_online/stream.py",
        "_warn_if_outliers(est, config, log_lik, np.where(learned, w, 0))",
        "_warn_if_outliers(est, config, log_lik, w * learned)",
        ("tests/test_faults.py", "-k", "huge_sample_weight"),
        "an infinite sample weight times a refused row's zero raises numpy's RuntimeWarning",
    ),
    Mutant(
        "tempered-progress-per-pass",
        "skbong/_online/stream.py",
        "report = _report(est, passes * steps) if est.verbose else None  # one report of all passes",
        "report = None",
        ("tests/test_progress.py", "-k", "tempered"),
        "fit's tempered passes draw one progress report per pass, each restarting at zero",
    ),
    Mutant(
        "tempered-later-warnings-repeated",
        "skbong/_online/stream.py",
        'for c in first + [c for c in later if not c.category.__module__.startswith("skbong")]:',
        "for c in first + later:",
        ("tests/test_passes.py", "-k", "warns_once"),
        "every tempered pass repeats the first pass's warnings, with row numbers of a shuffled order",
    ),
    Mutant(
        "tempered-window-keeps-every-pass",
        "skbong/_online/stream.py",
        '            est._window = _calibration.window_add(fresh.get("_window"), *rows, size)\n',
        "            pass\n",
        ("tests/test_passes.py", "-k", "calibration_window"),
        "after tempered passes the leave-one-out window holds each row once per pass at weight 1 / passes",
    ),
    Mutant(
        "passes-auto-with-a-bank",
        "skbong/_online/base.py",
        "            static = not config.dynamic and not self._bank_spec().is_bank\n",
        "            static = not config.dynamic\n",
        ("tests/test_passes.py", "-k", "auto_takes"),
        "passes='auto' takes tempered passes with a bank, whose evidence is a one-pass quantity",
    ),
    # --------------------------------------------------------- skbong/_core/posterior.py
    Mutant(
        "nan-x-fast-path",
        "skbong/_core/posterior.py",
        "            and bool(np.isfinite(X).all())\n",
        "",
        ("tests/test_errors.py",),
        "partial_fit's fast path accepts NaN / inf in X (left to the engine to refuse)",
    ),
    Mutant(
        "nan-x-fast-path-properties",
        "skbong/_core/posterior.py",
        "            and bool(np.isfinite(X).all())\n",
        "",
        ("tests/test_properties.py", "-k", "malformed"),
        "the same NaN fast path, against the malformed-input property test",
    ),
    Mutant(
        "plain-rows-accepts-nan",
        "skbong/_core/posterior.py",
        "            and bool(np.isfinite(X).all())\n        )",
        "        )",
        ("tests/test_properties.py",),
        "the validation fast path of predict / partial_fit lets NaN and inf rows through",
    ),
    Mutant(
        "plain-rows-ignores-width",
        "skbong/_core/posterior.py",
        "            and X.shape[1] == self.n_features_in_\n",
        "",
        ("tests/test_properties.py",),
        "the validation fast path lets rows of another width through",
    ),
    Mutant(
        "normals-ignore-the-seed",
        "skbong/_core/posterior.py",
        "    eps = np.random.default_rng([seed, 2]).standard_normal((n, p))",
        "    eps = np.random.default_rng([0, 2]).standard_normal((n, p))",
        ("tests/test_estimators.py::test_same_random_state_same_results",),
        "the sampled predictives draw the same parameters whatever the random_state",
    ),
    Mutant(
        "draws-shared-by-the-bank",
        "skbong/_core/posterior.py",
        "        key = (n_samples, self._seed, where)",
        "        key = (n_samples, self._seed, where is not None)",
        ("tests/test_predictive.py::test_bank_filters_keep_their_own_draws",),
        "every filter of a bank predicts with the parameter draws of the first one",
    ),
    Mutant(
        "draws-kept-across-seeds",
        "skbong/_core/posterior.py",
        "        key = (n_samples, self._seed, where)",
        "        key = (n_samples, where)",
        ("tests/test_estimators.py::test_same_random_state_same_results",),
        "the kept parameter draws outlive a change of the estimator's seed",
    ),
    Mutant(
        "draws-kept-across-updates",
        "skbong/_core/posterior.py",
        "        if cache and cache[0] is self._state and key in cache[1]:",
        "        if cache and key in cache[1]:",
        ("tests/test_predictive.py::test_estimators_cache_their_draws",),
        "the sampled predictives keep the previous belief's parameter draws after an update",
    ),
    Mutant(
        "draws-kept-without-bound",
        "skbong/_core/posterior.py",
        "            if sum(t.size for t in kept.values()) + thetas.size <= NORMALS_MAX:",
        "            if True:",
        ("tests/test_predictive.py::test_bank_filters_keep_their_own_draws",),
        "draws above NORMALS_MAX are kept (up to 8 MiB per filter of a bank, without bound)",
    ),
    Mutant(
        "one-row-block-in-float32",
        "skbong/_core/posterior.py",
        "    blocks = _PREDICT_BLOCKS if dt is np.float64 else _FLOAT32_BLOCKS",
        "    blocks = _PREDICT_BLOCKS",
        ("tests/test_integration.py", "-k", "float32_predictions"),
        "a lone float32 row is predicted in its own block, rounded unlike the same row in a batch",
    ),
    Mutant(
        "fitted-check-never-refuses",
        "skbong/_core/posterior.py",
        '    if "_state" not in est.__dict__:\n        check_is_fitted(est, "_state")',
        '    if False:\n        check_is_fitted(est, "_state")',
        ("tests/test_sklearn_checks.py::test_sklearn_compatible[BongRegressor(random_state=0)-check_estimators_unfitted]",),
        "an unfitted estimator predicts (AttributeError) instead of raising NotFittedError",
    ),
    Mutant(
        "snapshot-blind-to-types",
        "skbong/_core/posterior.py",
        "            (type(v).__name__, v) if type(v) in _SCALARS else repr(v)",
        "            v if type(v) in _SCALARS else repr(v)",
        ("tests/test_errors.py", "-k", "invalid_parameter_on_fitted"),
        "a parameter changed to an equal value of a wrong type (fit_intercept=1) is not validated again",
    ),
    Mutant(
        "predictive-memo-ignores-dtype",
        "skbong/_core/posterior.py",
        "        if memo is not None and memo[0] is parts and parts[0].dtype == dt:",
        "        if memo is not None and memo[0] is parts:",
        ("tests/test_predictive.py",),
        "a float32 belief's memo feeds a sampled predictive, which must compute in float64",
    ),
    Mutant(
        "float32-predictions-in-8-row-blocks",
        "skbong/_core/posterior.py",
        "_FLOAT32_BLOCKS = _PREDICT_BLOCKS[2:]",
        "_FLOAT32_BLOCKS = _PREDICT_BLOCKS[1:]",
        ("tests/test_integration.py", "-k", "float32_predictions"),
        "a lone float32 row is predicted in an 8-row block, other rounding than in a batch",
    ),
    Mutant(
        "predict-blocks-ignore-jacobians",
        "skbong/_core/posterior.py",
        "    fit = tuple(b for b in blocks if b * row_elements <= _BLOCK_ELEMENTS)",
        "    fit = blocks",
        ("tests/test_integration.py", "-k", "small_blocks"),
        "a large belief's linearised predictive still runs 128- and 1024-row blocks of Jacobians",
    ),
    Mutant(
        "predict-blocks-fixed-stride",
        "skbong/_core/posterior.py",
        "            big = blocks[-1]",
        "            big = _PREDICT_BLOCKS[-1]",
        ("tests/test_integration.py", "-k", "small_blocks"),
        "calls are cut into 1024-row pieces whatever the bounded block (no block holds them)",
    ),
    Mutant(
        "publish-mean-not-copied",
        "skbong/_core/posterior.py",
        "            self.posterior_mean_ = np.array(parts[0][1][0], self._state[0].dtype)",
        "            self.posterior_mean_ = np.asarray(parts[0][1][0], self._state[0].dtype)",
        ("tests/test_estimators.py", "-k", "posterior_mean_is_a_copy"),
        "posterior_mean_ is the belief's own array: writing to it changes the model",
    ),
    Mutant(
        "standardised-coef-bias-sign",
        "skbong/_core/posterior.py",
        "                bias = bias - weights @ affine[0]",
        "                bias = bias + weights @ affine[0]",
        ("tests/test_variational_defaults.py", "-k", "raw_inputs_are_standardised"),
        "intercept_ on the user's scale: b − (W / s) m with the sign of the shift flipped",
    ),
    # ------------------------------------------------------------- skbong/engine/cache.py
    Mutant(
        "cache-keeps-min-compile-time",
        "skbong/engine/cache.py",
        '    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)\n',
        "",
        ("tests/test_cold_start.py", "-k", "second_process"),
        "the cache keeps JAX's 1 s minimum compile time, so small programs recompile",
    ),
    # --------------------------------------------------------- skbong/_online/regressor.py
    Mutant(
        "auto-family-always-dlr",
        "skbong/_online/regressor.py",
        "            full_max=AUTO_FULL_MAX,\n",
        "            full_max=0,\n",
        ("tests/test_defaults.py", "-k", "auto_family"),
        "the regressor's family='auto' keeps the rank-10 dlr for the linear model",
    ),
    Mutant(
        "auto-family-regressor-at-classifier-size",
        "skbong/_online/regressor.py",
        "            full_max=AUTO_FULL_MAX,\n",
        "",
        ("tests/test_defaults.py", "-k", "auto_family"),
        "the regressor's observation forgets its own full_max and takes the classifiers' 128",
    ),
    Mutant(
        "observation-keeps-no-window",
        "skbong/_online/regressor.py",
        '            window_rows=int(self.calibration_rows) if calibration in ("loo", "evidence") else 0,\n',
        "            window_rows=0,\n",
        ("tests/test_calibration.py",),
        "the leave-one-out calibration's window of rows is never kept",
    ),
    Mutant(
        "observation-network-discount-for-linear",
        "skbong/_online/regressor.py",
        "            discount = 1.0 if linear else engine.filter.noise.NETWORK_DISCOUNT\n",
        "            discount = engine.filter.noise.NETWORK_DISCOUNT\n",
        ("tests/test_noise.py",),
        "noise_discount='auto' discounts the linear model's learned noise as a network's",
    ),
    Mutant(
        "calibration-auto-on-networks",
        "skbong/_online/regressor.py",
        "            if not linear:\n                return None\n",
        "",
        ("tests/test_calibration.py",),
        "calibration='auto' calibrates a network (by leave-one-out, which it refuses)",
    ),
    Mutant(
        "loo-auto-for-drift",
        "skbong/_online/regressor.py",
        '            return "prequential" if self._is_dynamic() else "loo"',
        '            return "loo"',
        ("tests/test_calibration.py::test_auto_calibrates_the_linear_model_only",),
        "calibration='auto' takes leave-one-out for a drifting linear model",
    ),
    Mutant(
        "dtype-auto-always-float32",
        "skbong/_online/regressor.py",
        '        return "float64" if n_params <= AUTO_FLOAT64_MAX else "float32"',
        '        return "float32"',
        ("tests/test_defaults.py::test_auto_dtype_is_float64_for_the_linear_model_only",),
        "dtype='auto' leaves the linear model in float32, where raw-scale features cancel",
    ),
    Mutant(
        "dtype-auto-float64-at-any-width",
        "skbong/_online/regressor.py",
        '        return "float64" if n_params <= AUTO_FLOAT64_MAX else "float32"',
        '        return "float64"',
        ("tests/test_defaults.py::test_auto_dtype_follows_the_width_of_the_linear_model",),
        "dtype='auto' takes float64 for a wide linear model, where it costs 3× float32",
    ),
    # --------------------------------------------------- skbong/_online/regression_face.py
    Mutant(
        "calibration-ignored",
        "skbong/_online/regression_face.py",
        "    counts = calibration_counts(est)\n"
        "    if counts is not None:",
        "    counts = calibration_counts(est)\n"
        "    if False:",
        ("tests/test_calibration.py",),
        "predict_interval ignores the PIT histogram",
    ),
    Mutant(
        "drift-calibration-ignores-evidence",
        "skbong/_online/regression_face.py",
        "    if static_only and est.drift_ != 1.0:\n"
        "        return prequential  # the evidence says the rows drift\n",
        "",
        ("tests/test_drift_bank.py::test_calibration_follows_the_evidence",),
        "a drifting stream's intervals are calibrated on leave-one-out PITs of the static filter",
    ),
    Mutant(
        "student-t-inflation-nan-for-fixed-noise",
        "skbong/_online/regression_face.py",
        "np.where(dofs > 2, 1.0 / (1.0 - 2.0 / dofs), np.inf)",
        "np.where(dofs > 2, dofs / (dofs - 2.0), np.inf)",
        ("tests/test_estimators.py", "-k", "std"),
        "return_std with a fixed noise (ν = ∞) is NaN: ∞ / ∞",
    ),
    Mutant(
        "student-t-inflation-finite-at-low-dof",
        "skbong/_online/regression_face.py",
        "np.where(dofs > 2, 1.0 / (1.0 - 2.0 / dofs), np.inf)",
        "np.abs(1.0 / (1.0 - 2.0 / dofs))",
        ("tests/test_noise.py",),
        "a Student-t of ν ≤ 2 degrees of freedom gets a finite standard deviation",
    ),
    Mutant(
        "predict-grad-blocks-one-jacobian",
        "skbong/_online/regression_face.py",
        'jacobians=(1 + est.n_features_in_ if grad else 1) if kind == "linmc" else 0,',
        'jacobians=1 if kind == "linmc" else 0,',
        ("tests/test_integration.py", "-k", "small_blocks"),
        "the input gradients' blocks are bounded as if they formed one Jacobian per row, not 1 + D",
    ),
    # -------------------------------------------------------- skbong/_online/classifier.py
    Mutant(
        "classes-shift-labels",
        "skbong/_online/classification_face.py",
        "    if not plain:\n"
        "        idx = np.searchsorted(est.classes_, y)\n",
        "    if not plain:\n"
        "        idx = (np.searchsorted(est.classes_, y) + (classes is not None)) % k\n",
        ("tests/test_estimators.py", "-k", "classes"),
        "partial_fit(classes=...) encodes each label as the next class",
    ),
    Mutant(
        "classes-shift-labels-checkpoint",
        "skbong/_online/classification_face.py",
        "    if not plain:\n"
        "        idx = np.searchsorted(est.classes_, y)\n",
        "    if not plain:\n"
        "        idx = (np.searchsorted(est.classes_, y) + (classes is not None)) % k\n",
        ("tests/test_checkpoint.py",),
        "the same label shift, against the checkpoint tests",
    ),
    Mutant(
        "label-fast-path-accepts-gaps",
        "skbong/_online/classification_face.py",
        "        unseen = (idx == k) | (est.classes_[np.minimum(idx, k - 1)] != y)",
        "        unseen = idx == k",
        ("tests/test_errors.py::test_unseen_integer_label_between_and_beyond_the_classes",),
        "an integer label between two classes passes the stream's fast path",
    ),
    # ----------------------------------------------------------- skbong/_online/poisson.py
    Mutant(
        "poisson-prior-centre-zero",
        "skbong/_online/poisson.py",
        "            shift[-1] = self.prior_intercept_",
        "            shift[-1] = 0.0",
        ("tests/test_poisson.py", "-k", "newton"),
        "the Poisson intercept's prior left at 0 instead of log of the mean count",
    ),
    Mutant(
        "poisson-moments-unbounded",
        "skbong/_online/poisson.py",
        "                jacobians=int(kind == \"linmc\"),",
        "                jacobians=0,",
        ("tests/test_integration.py", "-k", "poisson_linearised"),
        "the Poisson regressor's linearised moments run unbounded blocks of Jacobians",
    ),
    Mutant(
        "poisson-output-moments-unbounded",
        "skbong/_online/poisson.py",
        "                X, engine.predictive.predict_output_moments, state=state, jacobians=1",
        "                X, engine.predictive.predict_output_moments, state=state, jacobians=0",
        ("tests/test_integration.py", "-k", "poisson_linearised"),
        "predict_logpmf's output moments run unbounded blocks of Jacobians",
    ),
    # ------------------------------------------------------ skbong/engine/filter/newton.py
    Mutant(
        "newton-prior-variance-as-precision",
        "skbong/engine/filter/newton.py",
        "    prec = gram + jnp.diag(1.0 / prior_var)",
        "    prec = gram + jnp.diag(prior_var)",
        ("tests/test_refine.py", "-k", "laplace_evidence or newton_step"),
        "the closed-form pass adds the prior's variances to the precision, not their inverse",
    ),
    Mutant(
        "newton-gradient-of-the-last-block",
        "skbong/engine/filter/newton.py",
        "        return acc[0] + curv.factor @ curv.factor.T, acc[1] + g",
        "        return acc[0] + curv.factor @ curv.factor.T, g",
        ("tests/test_refine.py", "-k", "newton_step"),
        "the closed-form pass keeps the last block's gradient instead of the sum",
    ),
    # -------------------------------------------------------------- skbong/_online/bank.py
    Mutant(
        "laplace-evidence-without-logdet",
        "skbong/_online/bank.py",
        "    return np.where(sign > 0, value + 0.5 * logdet, -np.inf)",
        "    return np.where(sign > 0, value, -np.inf)",
        ("tests/test_refine.py", "-k", "laplace_evidence"),
        "Laplace's evidence without the ½ log |Σ| of the posterior's volume",
    ),
    Mutant(
        "laplace-evidence-without-prior-normaliser",
        "skbong/_online/bank.py",
        "    value = np.asarray(log_joint, np.float64) - 0.5 * np.sum(np.log(prior_var), axis=-1)",
        "    value = np.asarray(log_joint, np.float64)",
        ("tests/test_refine.py", "-k", "laplace_evidence"),
        "Laplace's evidence without the prior's normaliser −½ Σ log σ₀²",
    ),
    Mutant(
        "retire-drifting-banks",
        "skbong/_online/bank.py",
        "        not config.dynamic\n        and not of(est).learns_drift\n",
        "        True\n",
        ("tests/test_bank_retire.py",),
        "a drift bank retires the filters it needs to follow a change",
    ),
    Mutant(
        "retire-small-banks",
        "skbong/_online/bank.py",
        "        and config.model.n_params() >= RETIRE_MIN_PARAMS\n",
        "",
        ("tests/test_bank_retire.py",),
        "a bank of small filters retires too, and pays more program calls than it saves",
    ),
    Mutant(
        "retire-checks-at-call-ends",
        "skbong/_online/bank.py",
        "    return checks\n",
        "    return sorted(set(checks) | {n_steps})\n",
        ("tests/test_bank_retire.py",),
        "a bank checks for retirement at the end of every call, so a split changes the rows",
    ),
    Mutant(
        "one-pass-prior-never",
        "skbong/_online/bank.py",
        "return models.ONE_PASS_NETWORK_PRIOR_VARIANCE if one_pass else models.NETWORK_PRIOR_VARIANCE",
        "return models.NETWORK_PRIOR_VARIANCE",
        ("tests/test_defaults.py", "-k", "auto_prior"),
        "a classifier network's partial_fit starts from the broad prior its one-pass step overshoots from",
    ),
    Mutant(
        "network-evidence-not-discounted",
        "skbong/_online/bank.py",
        "NETWORK_EVIDENCE_DISCOUNT = 0.99\n",
        "NETWORK_EVIDENCE_DISCOUNT = 1.0\n",
        ("tests/test_noise.py", "-k", "discounted"),
        "a network's bank evidence not forgetting",
    ),
    Mutant(
        "drift-bank-grid-drift-major",
        "skbong/_online/bank.py",
        "    return np.repeat(priors, len(drifts)), np.tile(drifts, len(priors))",
        "    return np.tile(priors, len(drifts)), np.repeat(drifts, len(priors))",
        ("tests/test_drift_bank.py::test_drift_bank_is_the_ou_kalman_filters_weighted_by_their_evidence",),
        "the filters' (prior, drift) pairs are listed in another order than they run",
    ),
    Mutant(
        "drift-weights-summed-over-drifts",
        "skbong/_online/bank.py",
        "    return _weight_table(est).sum(axis=0)\n",
        "    return _weight_table(est).sum(axis=1)\n",
        ("tests/test_drift_bank.py::test_drift_bank_is_the_ou_kalman_filters_weighted_by_their_evidence",),
        "drift_weights_ sums the wrong axis of the bank's weight table",
    ),
    Mutant(
        "drift-loo-over-all-filters",
        "skbong/_online/bank.py",
        "        weights = np.where(of(est).grid()[1] == 1.0, weights, 0.0)\n",
        "",
        ("tests/test_drift_bank.py::test_calibration_follows_the_evidence",),
        "the leave-one-out PITs mix the drifting filters, whose rows are not exchangeable",
    ),
    # ---------------------------------------------------- skbong/_merging/checks.py
    Mutant(
        "merge-ignores-prior-variance",
        "skbong/_merging/checks.py",
        '        "prior variance": est._bank_spec().priors,\n',
        "",
        ("tests/test_merge.py", "-k", "auto_prior_differs"),
        "shards of different σ₀² merge as if they shared one prior",
    ),
    # -------------------------------------------------- skbong/_batch/base.py
    Mutant(
        "variational-prior-eager",
        "skbong/_batch/base.py",
        "state = epochs.prior(config, self._seed, hyper, dt)",
        "state = epochs.prior.__wrapped__(config, self._seed, hyper, np.dtype(dt))",
        ("tests/test_variational.py", "-k", "first_fit_compiles"),
        "the variational prior runs eagerly, one program per operation",
    ),
    # ------------------------------------------------------- skbong/_online/calibration.py
    Mutant(
        "pit-gaussian-for-learned-noise",
        "skbong/_online/calibration.py",
        "    if dof is None:\n        return scipy.special.ndtr(z)",
        "    if True:\n        return scipy.special.ndtr(z)",
        ("tests/test_calibration.py",),
        "the PIT under a learned noise uses the Gaussian CDF, not the Student-t",
    ),
    Mutant(
        "pit-dof-of-the-call-start",
        "skbong/_online/calibration.py",
        "    per_row = np.repeat(dof, batch_size, axis=0)[: len(z)]",
        "    per_row = np.repeat(dof[:1], len(z), axis=0)",
        ("tests/test_calibration.py",),
        "every row's PIT takes the degrees of freedom of the call's first step",
    ),
    Mutant(
        "pit-counts-ignore-weights",
        "skbong/_online/calibration.py",
        "weights=w[keep], minlength=N_BINS)",
        "weights=(w[keep] > 0) * 1.0, minlength=N_BINS)",
        ("tests/test_calibration.py",),
        "the PIT histogram counts rows, not their sample weights",
    ),
    Mutant(
        "loo-no-residual-inflation",
        "skbong/_online/calibration.py",
        "        z = r / (1 - h) / np.sqrt(s_loo * (1 + q / (1 - h)))",
        "        z = r / np.sqrt(s_loo * (1 + q / (1 - h)))",
        ("tests/test_calibration.py::test_loo_pits_are_the_predictives_of_the_other_rows",),
        "the leave-one-out residual is the in-sample one (r, not r / (1 - h))",
    ),
    Mutant(
        "loo-noise-keeps-the-row",
        "skbong/_online/calibration.py",
        "(a * s - 0.5 * w * r**2 / (1 - h)) / a_loo",
        "(a * s) / a",
        ("tests/test_calibration.py::test_loo_pits_are_the_predictives_of_the_other_rows",),
        "the learned noise keeps the left-out row's residual and count",
    ),
    Mutant(
        "loo-leverage-ignores-weight",
        "skbong/_online/calibration.py",
        "    keep = w * q < 1.0\n    h = np.where(keep, w * q, 0.0)",
        "    keep = q < 1.0\n    h = np.where(keep, q, 0.0)",
        ("tests/test_calibration.py::test_loo_pits_are_the_predictives_of_the_other_rows",),
        "a weighted row's leverage ignores its sample weight",
    ),
    Mutant(
        "loo-window-drops-old-rows",
        "skbong/_online/calibration.py",
        "    return (tuple(np.array(a) for a in kept_rows(blocks, size)),)",
        "    return (tuple(np.array(a) for a in kept_rows(blocks, size // 2)),)",
        ("tests/test_calibration.py::test_loo_keeps_the_last_rows_it_learned",),
        "the window keeps fewer old rows than calibration_rows allows",
    ),
    Mutant(
        "window-block-is-a-view",
        "skbong/_online/calibration.py",
        "    block = tuple(np.array(a[-size:]) for a in (X, Y, w))",
        "    block = tuple(a[-size:] for a in (X, Y, w))",
        ("tests/test_calibration.py", "-k", "window"),
        "the calibration window keeps views of the caller's rows, which the caller may overwrite",
    ),
    Mutant(
        "window-never-joins",
        "skbong/_online/calibration.py",
        "    if len(blocks) < WINDOW_BLOCKS and len(block[2]) * WINDOW_BLOCKS < size:",
        "    if True:",
        ("tests/test_calibration.py", "-k", "window"),
        "the calibration window grows by a block per call without bound",
    ),
    Mutant(
        "window-keeps-the-first-rows",
        "skbong/_online/calibration.py",
        "    return tuple(a[-size:] for a in rows)",
        "    return tuple(a[:size] for a in rows)",
        ("tests/test_calibration.py",),
        "the calibration keeps the oldest rows of its window, not the last ones",
    ),
    # ----------------------------------------------------------- skbong/__init__.py
    Mutant(
        "eager-package-import",
        "skbong/__init__.py",
        "import importlib\n",
        "import importlib\n\nfrom ._regressor import BongRegressor  # noqa: F401\n",
        ("tests/test_cold_start.py", "-k", "neither"),
        "import skbong loads the estimators (and JAX, scikit-learn) eagerly again",
    ),
    # -------------------------------------------------- benchmarks/bench_scaling.py
    Mutant(
        "scaling-obs-per-step-not-per-row",
        "benchmarks/bench_scaling.py",
        '"obs_per_s": steps * batch / best,',
        '"obs_per_s": steps / best,',
        ("tests/test_benchmarks.py", "-k", "scaling"),
        "bench_scaling --batch B reports steps per second as observations per second",
    ),
    Mutant(
        "scaling-batch-ignored",
        "benchmarks/bench_scaling.py",
        "size=(steps, batch, d)",
        "size=(steps, 1, d)",
        ("tests/test_benchmarks.py", "-k", "scaling"),
        "bench_scaling --batch B streams one row per step",
    ),
]


def _check_snippets(repo, mutants):
    problems = []
    for m in mutants:
        path = os.path.join(repo, m.path)
        if not os.path.exists(path):
            problems.append(f"{m.name}: {m.path} does not exist")
            continue
        with open(path, encoding="utf-8") as fh:
            count = fh.read().count(m.old)
        if count != 1:
            problems.append(f"{m.name}: original snippet found {count} times in {m.path}")
        if m.old == m.new:
            problems.append(f"{m.name}: the replacement equals the original")
    return problems


def _pytest(copy, tests):
    env = dict(os.environ, PYTHONPATH=copy + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [
        sys.executable, "-m", "pytest", "-x", "-q", "-o", "addopts=", "-p", "no:cacheprovider",
        "-W", "ignore::pytest.PytestUnraisableExceptionWarning", *tests,
    ]  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True)
    return proc.returncode, time.perf_counter() - start, proc.stdout + proc.stderr


def _imports_copy(copy):
    """The copy's skbong must be the one imported (not the editable install)."""
    env = dict(os.environ, PYTHONPATH=copy)
    out = subprocess.run(
        [sys.executable, "-c", "import skbong; print(skbong.__file__)"],
        cwd=copy, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    return os.path.realpath(out).startswith(os.path.realpath(copy))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run these mutants only")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated runs")
    parser.add_argument("-v", "--verbose", action="store_true", help="print pytest's output")
    args = parser.parse_args(argv)

    names = [m.name for m in MUTANTS]
    assert len(set(names)) == len(names), "mutant names must be unique"
    mutants = MUTANTS
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            parser.error(f"unknown mutant(s) {unknown}; --list shows the names")
        mutants = [m for m in MUTANTS if m.name in args.only]
    if args.list:
        for m in mutants:
            print(f"{m.name:36s} {m.path}: {m.desc}")
        return 0

    problems = _check_snippets(ROOT, mutants)
    if problems:
        print("stale mutants:\n  " + "\n  ".join(problems))
        return 1

    with tempfile.TemporaryDirectory(prefix="skbong-mutate-") as tmp:
        copy = os.path.join(tmp, "repo")
        shutil.copytree(ROOT, copy, ignore=IGNORE, symlinks=True)
        if not _imports_copy(copy):
            print("the copy's skbong is not the one imported: PYTHONPATH is not honoured")
            return 1
        failed = False
        if not args.no_baseline:
            for tests in dict.fromkeys(m.tests for m in mutants):
                rc, secs, out = _pytest(copy, tests)
                status = "passes" if rc == 0 else f"FAILS (pytest exit {rc})"
                print(f"baseline {' '.join(tests)}: {status} in {secs:.1f} s", flush=True)
                if rc != 0:
                    failed = True
                    print(out[-3000:])
            if failed:
                print("the unmutated tests must pass first")
                return 1
        rows = []
        for m in mutants:
            path = os.path.join(copy, m.path)
            with open(path, encoding="utf-8") as fh:
                original = fh.read()
            try:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(original.replace(m.old, m.new, 1))
                rc, secs, out = _pytest(copy, m.tests)
            finally:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(original)
            if rc == 5:
                verdict, failed = "NO TESTS", True
            elif rc == 0:
                verdict, failed = "SURVIVED", True
            elif rc == 1:
                verdict = "killed"
            else:
                verdict = f"killed (pytest exit {rc})"
            rows.append((m, verdict, secs))
            print(f"{m.name:36s} {verdict:24s} {secs:7.1f} s  {' '.join(m.tests)}", flush=True)
            if args.verbose or rc in (0, 5):
                print(out[-2000:])
        n_killed = sum(v.startswith("killed") for _, v, _ in rows)
        print(f"\n{n_killed} of {len(rows)} mutants killed")
        for m, verdict, _ in rows:
            if not verdict.startswith("killed"):
                print(f"  {verdict}: {m.name}: {m.desc}")
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
