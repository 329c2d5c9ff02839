"""Shared scikit-learn machinery of BongRegressor and BongClassifier.

The estimators validate, encode, convert to and from JAX, and delegate every
number to :mod:`skbong.engine`. The fitted belief is kept as numpy arrays (no JAX
array and no jitted function lives on an estimator), so estimators pickle and
resume on another machine.
"""

import functools
import os
from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .. import engine
from .._core import posterior
from .._core.posterior import BeliefBase
from .._core.signature import structural_signature
from . import bank

STRUCTURAL = (
    "hidden_layer_sizes",
    "activation",
    "model",
    "fit_intercept",
    "family",
    "rank",
    "rule",
    "hessian",
    "n_iter",
    "mc_samples",
    "batch_size",
    "dtype",
    "backtrack",
)
"""Parameters that fix the shape of the belief or the compiled program: changing one
of them between ``partial_fit`` calls requires a new ``fit``."""

def _physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 16 * 2**30



AUTO_PASSES = 10
"""The tempered passes ``fit`` makes under ``passes="auto"`` for networks and user models
(each row at weight 1/10 in each pass). One 50-unit layer, the seven UCI regression sets,
three splits each (``benchmarks/bench_passes.py``): against one pass the test
log-likelihood rose on 20 of the 21 set-splits (mean −1.982 → −1.579; the other fell by
0.002) and the RMSE fell on all 21 (yacht 2.76 → 1.03, energy 1.86 → 0.47 on split 0);
3 passes gained less (−1.757), 30 more on average (−1.554) but lost to 10 on 16 of the
21. On five classification sets (one 32-unit layer) the log-loss fell (digits 0.172 →
0.147). (doc: defaults)"""


def auto_family(model, obs):
    """``family="auto"`` for an engine model: ``"full"`` for the linear model of at most
    ``obs.full_max`` parameters (:class:`~skbong._online.observation.Observation`),
    ``"dlr"`` otherwise."""
    linear = engine.models.is_linear(model)
    return "full" if linear and model.n_params() <= obs.full_max else "dlr"


def _draw_seed(random_state):
    """The engine's seed for a fit: a draw from ``random_state`` (scikit-learn's
    convention); for an int the same draw every time, so it is remembered (seeding a
    ``RandomState`` costs about 0.4 ms of a small fit)."""
    if isinstance(random_state, Integral) and not isinstance(random_state, bool):
        return _seed_of_int(int(random_state))
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


@functools.lru_cache(maxsize=256)
def _seed_of_int(value):
    return int(check_random_state(value).randint(np.iinfo(np.int32).max))


class BongBase(BeliefBase):
    """Parameters, validation and the engine configuration shared by the BONG estimators.

    An estimator on this base names its face in its class body (``_encode_y``,
    ``_linear_attributes``, ``_predictive_kind``, its likelihood ``_likelihood(C)`` and
    its public prediction methods; :mod:`skbong._online.regression_face`,
    :mod:`skbong._online.classification_face`), and its ``fit`` / ``partial_fit`` call the
    driver, :func:`skbong._online.stream.fit_rows`. It also names ``_observation(model)``,
    its observation model's choices for an engine model
    (:class:`~skbong._online.observation.Observation`: the learned noise, the interval
    calibration, the Student-t's ν, the linear model's largest full covariance); this
    base reads that record and supplies no default.
    """

    _parameter_constraints = {
        "hidden_layer_sizes": ["array-like", Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions(set(engine.models.ACTIVATIONS))],
        "model": "no_validation",
        "fit_intercept": ["boolean"],
        "family": [StrOptions({*engine.FAMILY_NAMES, "auto"})],
        "rank": [Interval(Integral, 1, None, closed="left")],
        "rule": [StrOptions(set(engine.RULE_NAMES))],
        "hessian": [StrOptions(set(engine.HESSIAN_NAMES))],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
        "mc_samples": [Interval(Integral, 1, None, closed="left")],
        "backtrack": [Interval(Integral, 0, None, closed="left")],
        "prior_variance": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto", "bank"})],
        "drift": [Interval(Real, 0, 1, closed="right"), StrOptions({"auto"})],
        "process_noise": [Interval(Real, 0, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "passes": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "predictive": [StrOptions({*engine.PREDICTIVES, "auto"})],
        "predictive_samples": [Interval(Integral, 1, None, closed="left")],
        "dtype": [StrOptions({"auto", "float32", "float64"})],
        "on_error": [StrOptions({"raise", "skip"})],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        hidden_layer_sizes=(),
        activation="relu",
        model=None,
        fit_intercept=True,
        family="auto",
        rank=10,
        rule="bong",
        hessian="lin_hess",
        learning_rate=0.1,
        n_iter=10,
        mc_samples=10,
        backtrack=0,
        prior_variance="auto",
        drift=1.0,
        process_noise=0.0,
        batch_size=1,
        passes="auto",
        predictive="auto",
        predictive_samples=100,
        dtype="auto",
        on_error="raise",
        random_state=None,
        verbose=0,
    ):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.model = model
        self.fit_intercept = fit_intercept
        self.family = family
        self.rank = rank
        self.rule = rule
        self.hessian = hessian
        self.learning_rate = learning_rate
        self.n_iter = n_iter
        self.mc_samples = mc_samples
        self.backtrack = backtrack
        self.prior_variance = prior_variance
        self.drift = drift
        self.process_noise = process_noise
        self.batch_size = batch_size
        self.passes = passes
        self.predictive = predictive
        self.predictive_samples = predictive_samples
        self.dtype = dtype
        self.on_error = on_error
        self.random_state = random_state
        self.verbose = verbose

    # the belief's public attributes (skbong._core.posterior)
    posterior_ = property(posterior.posterior)
    posterior_var_ = property(posterior.posterior_var)
    dtype_ = property(posterior.dtype)
    predictive_ = property(posterior.predictive)
    n_params_ = property(posterior.n_params)

    # the bank of filters (bank.py): the filters predictions mix, their evidence and weights
    _bank_spec = bank.of
    _filter_weights = bank.filter_weights
    _components = bank.components
    prior_weights_ = property(bank.prior_weights)
    drift_weights_ = property(bank.drift_weights)
    log_evidence_ = property(bank.log_evidence)
    bank_grid_ = property(bank.bank_grid)
    prior_grid_ = property(bank.prior_grid)
    drift_grid_ = property(bank.drift_grid)
    prior_variance_ = property(bank.prior_variance)
    drift_ = property(bank.drift)

    def _poor_score(self):
        """scikit-learn's ``poor_score`` tag: True for the plain-gradient rules (BOG,
        BBB), whose one-pass score depends on a ``learning_rate`` tuned to the data's
        scale, so that no fixed rate reaches the checks' R² 0.5 / accuracy 0.83 on every
        dataset (doc: scikit-learn compatibility)."""
        rule = engine.RULES.get(self.rule) if isinstance(self.rule, str) else None
        return rule is not None and not rule.natural

    # --------------------------------------------------------------- checking
    def _validate_all_params(self):
        self._validate_params()
        hidden = self._model_params()
        engine.check_names(
            family=None if self.family == "auto" else self.family,
            rule=self.rule,
            hessian=self.hessian,
            learning_rate=self.learning_rate,
        )
        return hidden

    def _signature(self):
        """The structural parameters by value (:func:`~skbong._core.signature.structural_signature`),
        and whether ``prior_variance`` and ``drift`` are ``"auto"``: a bank's filters
        are stacked on a leading axis, so a number may replace a number after a fit, not
        ``"auto"`` (or the reverse)."""
        spec = self._bank_spec()
        banked = tuple(
            (name, "a bank" if learned else "a number")
            for name, learned in (("prior_variance", spec.learns_prior), ("drift", spec.learns_drift))
        )
        return structural_signature(self, STRUCTURAL) + banked

    def _build_config(self, n_features, n_outputs, hidden):
        model = self._build_model(n_features, n_outputs, hidden)
        n_params = model.n_params()
        obs = self._observation(model)
        family = self._resolve_family(model, obs)
        need = engine.FAMILIES[family].memory(n_params, int(self.rank), np.dtype(self._jax_dtype()).itemsize)
        if need > 0.5 * _physical_memory():
            raise ValueError(
                f"family={family!r} with P={n_params} parameters needs about "
                f"{need / 2**30:.1f} GiB for the belief and its update, more than half "
                f"of this machine's memory ({_physical_memory() / 2**30:.1f} GiB); use "
                "family='dlr' or 'diag'"
            )
        return engine.Config(
            model=model,
            likelihood=self._likelihood(n_outputs),
            family=family,
            rank=min(int(self.rank), n_params),  # R ≥ P adds nothing: R = P is exact
            rule=self.rule,
            hessian=self.hessian,
            n_iter=int(self.n_iter),
            mc_samples=int(self.mc_samples),
            backtrack=int(self.backtrack),
            obs_dof=obs.obs_dof,
            dynamic=self._is_dynamic(),
            learn_noise=obs.learn_noise,
            noise_discount=obs.noise_discount,
            noise_coupled=obs.noise_coupled,
            evidence=self._bank_spec().is_bank,
            pit=obs.pit,
        )

    def _resolve_family(self, model, obs):
        """The family the belief uses: ``family``, or for ``"auto"`` :func:`auto_family`
        for this engine model and observation, checked against ``hessian``."""
        if self.family != "auto":
            return self.family
        family = auto_family(model, obs)
        engine.check_names(family=family, hessian=self.hessian)
        return family

    def _passes(self, config):
        """The tempered passes ``fit`` makes (``passes``; ``"auto"``: :data:`AUTO_PASSES`
        for networks and user models, 1 for the linear model, whose one pass is exact
        for the Gaussian likelihood and refined for the GLMs (``refine``), and 1 where a
        bank runs or the prequential calibration scores the rows). More than one pass
        needs a static belief (a pass over a stream that drifts would apply the drift
        again), a single filter (a bank's evidence is the one-pass marginal likelihood of
        the rows, which tempered passes do not give), and no prequential calibration (its
        PITs score each row before it is learned)."""
        if self.passes == "auto":
            static = not config.dynamic and not self._bank_spec().is_bank
            one_pass = config.pit is not None or engine.models.is_linear(config.model)
            return AUTO_PASSES if static and not one_pass else 1
        passes = int(self.passes)
        if passes > 1 and config.dynamic:
            raise ValueError(
                f"passes={passes} needs a static belief (drift=1, process_noise=0): each pass "
                "would apply the drift to the rows again; use passes=1 with drift or "
                "process_noise"
            )
        if passes > 1 and config.pit is not None:
            raise ValueError(
                f"passes={passes} with calibration={self.calibration!r}: the prequential "
                "calibration scores each row before the model has learned it, which later "
                "passes cannot do; use passes=1, or calibration=None"
            )
        if passes > 1 and self._bank_spec().is_bank:
            raise ValueError(
                f"passes={passes} needs a single filter: a bank's weights are the evidence of "
                "one pass over the rows, which tempered passes do not give; use passes=1, or "
                "a fixed prior_variance (and drift)"
            )
        return passes

    def _is_dynamic(self):
        """Whether the predict step (drift or process noise) runs before every update."""
        return bool(self.drift != 1.0 or self.process_noise != 0.0)

    def _prior_variances(self, config, stationary=False):
        """Prior variance of every parameter, (P,) numpy in float64 (the model's fan-in
        scaling of ``prior_variance``; (K, P) for the bank), cached per value.

        Regression intercepts start from their own broad prior,
        :data:`~skbong.engine.models.OUTPUT_BIAS_VARIANCE`; classifiers' logit biases
        keep σ₀². ``stationary=True`` gives the variances the OU drift forgets toward
        (``Hyper.prior_var``): σ₀² for the intercepts too. The broad value is where an
        intercept's uncertainty starts, for raw-scale targets, not a scale on which it
        wanders: as a stationary variance it would add (1 − γ²) · 100 to the intercept's
        variance at every step (90 % intervals covered 97 % of a drifting stream).
        """
        cached = getattr(self, "_prior_var_cache", None)
        key = (self._bank_spec(), config.model, config.likelihood)
        if cached is None or cached[0] != key:
            broad = config.impl.likelihood.additive_noise

            def one(v, wide):
                return config.model.prior_variances(
                    v, engine.models.OUTPUT_BIAS_VARIANCE if wide else v
                )

            spec = self._bank_spec()
            grid = spec.grid()[0]
            value = tuple(np.stack([one(v, wide) for v in grid]) for wide in (broad, False))
            if not spec.is_bank:
                value = tuple(v[0] for v in value)
            cached = self._prior_var_cache = (key, value)
        return cached[1][1 if stationary else 0]

    def _hyper(self, obs_var, config):
        # numpy values: the jitted engine converts them in its fast C++ path, far cheaper
        # than one jnp.asarray dispatch per hyperparameter
        dt = self._jax_dtype()
        spec = self._bank_spec()
        drift = spec.grid()[1] if spec.learns_drift else spec.drifts[0]
        return engine.Hyper(
            prior_var=self._prior_variances(config, stationary=True).astype(dt),
            obs_var=np.asarray(obs_var, dt),
            learning_rate=np.asarray(self.learning_rate, dt),
            drift=np.asarray(drift, dt),
            process_noise=np.asarray(self.process_noise, dt),
        )

    # ------------------------------------------------------------ the belief
    def _posterior_family(self):
        # ``family_`` resolves "auto"; estimators pickled before it existed had no "auto"
        return getattr(self, "family_", self.family)

    def _state_to_jax(self):
        """The belief as an engine state of numpy arrays (the jitted engine converts them)."""
        return self._state_class()(*self._state)

    def _engine_state(self, state, noise):
        """What the stream carries: the belief, paired with the noise posterior when it
        is learned."""
        cls = self._state_class()
        return cls(*state) if noise is None else (cls(*state), engine.NoiseState(*noise))

    def _reset(self, n_features, n_outputs, hidden, fit=False):
        """Forget everything: draw the seed, build the configuration, choose the passes
        (``fit``: :meth:`_passes`; 1 for ``partial_fit``) and build the prior for them.
        Returns the configuration and the passes."""
        self._seed = _draw_seed(self.random_state)
        config = self._build_config(n_features, n_outputs, hidden)
        passes = self._passes(config) if fit else 1
        self._init_prior(config, passes)
        self._noise = None
        self._pit_counts = None
        self._window = self._loo_cache = None
        self._draws_cache = []  # the sampled predictives' draws (BeliefBase._draws)
        self._fit_signature = self._signature()
        self.family_ = config.family
        self._config_cache = (self._checked[0], config)
        self._hidden = hidden
        self.n_observations_ = 0
        self.n_skipped_ = 0
        self._n_steps = 0
        return config, passes

    def _init_prior(self, config, passes):
        """The belief at the prior, for a fit of ``passes`` passes (the σ₀² of
        ``prior_variance="auto"`` depends on it: :func:`.bank.auto_prior`)."""
        self._one_pass_prior = passes == 1 and not config.impl.likelihood.additive_noise
        with self._x64():
            prior_var = self._prior_variances(config).astype(self._jax_dtype())
            mean0, state = engine.prior(config, self._seed, prior_var, self._jax_dtype())
            self._prior_mean = np.asarray(mean0)
            self._state = tuple(np.asarray(a) for a in state)
        # a bank's filters are stacked on a leading axis; their weights come from the evidence
        self._log_evidence = np.zeros(len(prior_var)) if self._bank_spec().is_bank else None

    def _config(self, hidden=None):
        """The engine configuration of the fitted belief; ``hidden``: already-checked layer
        sizes (the parameters are validated here otherwise)."""
        if hidden is None:
            hidden = self._check_params()
        snapshot = self._checked[0]  # the parameters just checked
        cached = getattr(self, "_config_cache", None)
        if cached is not None and cached[0] == snapshot:
            return cached[1]
        signature = self._signature()
        if signature != self._fit_signature:
            changed = [k for (k, v), (_, w) in zip(signature, self._fit_signature) if v != w]
            raise ValueError(
                f"parameter(s) {changed} changed since the estimator was fitted; they fix the shape "
                "of the posterior, so call fit() to start again"
            )
        config = self._build_config(self.n_features_in_, self._n_out, hidden)
        self._config_cache = (snapshot, config)
        return config


__all__ = ["BongBase", "STRUCTURAL"]
