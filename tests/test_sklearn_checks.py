"""scikit-learn's estimator checks on a generated sample of configurations.

The sample is ``benchmarks/bench_checks.py``'s seeded greedy covering design over the
product of estimator × family × rule × hessian × model (linear / one hidden layer of 4)
× predictive × backtrack (× the regressor's likelihood; the variational estimators with
two solvers), valid combinations only: its first configurations (the quick lane) cover
every value of every axis, the next ones (``-m exhaustive``, deselected by default) more
pairs of values. The three
Bong estimators at their defaults run in the quick lane too.

Each configuration runs every check through ``check_estimator`` with
``expected_failed_checks=skbong.expected_failed_checks(estimator)``, as a user would,
and the test asserts that the checks that fail are exactly the declared ones: a check
that fails undeclared fails the test, and so does a declared check that passes
(``check_estimator`` itself reports that as a plain pass, ``parametrize_with_checks``
as an XPASS). A score threshold a configuration does not promise is the ``poor_score``
tag, not an expected failure.
"""

import gc
import importlib.util
import warnings
from pathlib import Path

import jax
import pytest
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import (
    check_estimator,
    check_sample_weight_equivalence_on_dense_data,
    estimator_checks_generator,
)

from skbong import (
    BongClassifier,
    BongPoissonRegressor,
    BongRegressor,
    VariationalClassifier,
    VariationalRegressor,
    expected_failed_checks,
)
from skbong._compat import _MEASURED, SAMPLE_WEIGHT_CHECK, may_refuse_rows, measured_only

_path = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_checks.py"
_spec = importlib.util.spec_from_file_location("skbong_bench_checks", _path)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

QUICK = bench.covering_prefix()
"""The quick lane: the shortest prefix of the sample that covers every axis value."""
SLOW = 24
"""The sample under ``-m slow`` (its first ``QUICK`` run in the quick lane)."""
SAMPLE = bench.sample_configurations(SLOW)


def _id(config):
    return "-".join(str(v) for v in config.values())


def _params():
    for config in bench.DEFAULTS + SAMPLE[:QUICK]:
        yield pytest.param(config, id=_id(config))
    for config in SAMPLE[QUICK:]:
        yield pytest.param(config, id=_id(config), marks=pytest.mark.exhaustive)


def _failing_checks(estimator, expected):
    """{check name: first line of its exception} of the checks that raise, with
    ``expected`` as ``expected_failed_checks`` (a check whose variants share its name
    fails if any variant does); skipped checks are neither."""
    failed = {}

    def callback(*, estimator, check_name, exception, status, expected_to_fail, expected_to_fail_reason):
        if status in ("failed", "xfail") and check_name not in failed:
            failed[check_name] = bench.first_line(exception)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(
            estimator, expected_failed_checks=expected, on_fail=None, on_skip=None, callback=callback
        )
    return failed


@pytest.fixture(autouse=True)
def _release_programs():
    """Drop the compiled programs of each configuration's checks: a process that keeps
    the programs of many configurations' checks exhausts XLA:CPU's code memory."""
    yield
    jax.clear_caches()
    gc.collect()


@pytest.mark.parametrize("config", list(_params()))
def test_declared_failures_are_exactly_the_failures(config):
    est = bench.build(config)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every configuration of the sample is measured
        expected = expected_failed_checks(est)
    assert all(isinstance(r, str) and len(r) > 40 for r in expected.values())
    failed = _failing_checks(est, expected)
    undeclared = {k: v for k, v in failed.items() if k not in expected}
    passed = sorted(set(expected) - set(failed))
    assert not undeclared, f"failed, not declared: {undeclared}"
    assert not passed, f"declared, passed: {passed}"


def test_sample_covers_every_axis_value_and_is_deterministic():
    """The quick lane holds every value of every axis; the sample is a fixed function
    of its seed, and a shorter sample is a prefix of a longer one."""
    values = {(k, v) for axes in bench.AXES for k, vs in axes.items() for v in vs}
    assert {item for config in SAMPLE[:QUICK] for item in config.items()} == values
    assert QUICK <= 8
    assert bench.sample_configurations(SLOW) == SAMPLE
    assert bench.sample_configurations(QUICK + 1) == SAMPLE[: QUICK + 1]
    assert len({_id(c) for c in SAMPLE}) == SLOW
    for config in SAMPLE:  # valid only: mc_hess is not available with dlr
        assert (config.get("family"), config.get("hessian")) != ("dlr", "mc_hess")


def test_measured_table_names_real_checks_of_sampled_configurations():
    """Every row of the measured table is a configuration of the sample (or a default)
    whose failures are known only by measuring, with a known mechanism, naming checks
    scikit-learn runs on it (a misspelt entry would never match); the configurations the
    docs say fail nothing beyond the sample-weight check have no row."""
    sampled = [{"model": "linear", **c} for c in bench.DEFAULTS + SAMPLE]
    sampled = [{k: v for k, v in c.items() if k != "predictive"} for c in sampled]
    assert _MEASURED
    for config, mechanism, checks in _MEASURED:
        assert config in sampled
        est = bench.build({**config, "predictive": "plugin"})
        assert mechanism in ("step", "outlier", "score", "none")
        assert (mechanism == "none") == (not checks)
        assert measured_only(est)
        names = {getattr(c, "func", c).__name__ for _, c in estimator_checks_generator(est)}
        assert {"check_" + w for w in checks.split()} <= names, config


def test_unmeasured_configuration_warns_where_its_failures_are_measured_only():
    for est in (
        BongRegressor(family="full_moment", rule="bog", learning_rate=0.0123),
        BongClassifier(hidden_layer_sizes=(3,)),
        BongPoissonRegressor(rank=3),
    ):
        with pytest.warns(UserWarning, match="not measured"):
            expected = expected_failed_checks(est)
        assert list(expected) == [SAMPLE_WEIGHT_CHECK]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # predicted: the sample-weight check alone
        for est in (BongClassifier(family="diag", rule="blr"), BongRegressor(rank=3, random_state=7)):
            assert list(expected_failed_checks(est)) == [SAMPLE_WEIGHT_CHECK]


def test_measured_configuration_matches_whatever_its_predictive():
    config, _, checks = next(row for row in _MEASURED if row[1] == "step" and row[2])
    for predictive in ("plugin", "mc"):
        est = bench.build({**config, "predictive": predictive})
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            expected = expected_failed_checks(est)
        assert {"check_" + w for w in checks.split()} <= set(expected)
        assert all("refuses the row" in expected["check_" + w] for w in checks.split())
    with pytest.warns(UserWarning, match="not measured"):  # another random_state: not it
        expected_failed_checks(est.set_params(random_state=1))


@pytest.mark.parametrize(
    "params",
    [{}, {"family": "full", "rule": "blr", "n_iter": 2, "obs_variance": 0.5}, {"family": "dlr", "rank": 9}],
)
def test_conjugate_float64_passes_sample_weight_check(params):
    """The linear-Gaussian model with a natural rule and a fixed prior is conjugate: in
    float64 weighting a row is repeating it, to the check's 1e-7."""
    est = BongRegressor(prior_variance=1.0, dtype="float64", random_state=0, **params)
    assert SAMPLE_WEIGHT_CHECK not in expected_failed_checks(est)
    assert SAMPLE_WEIGHT_CHECK in expected_failed_checks(est.set_params(dtype="float32"))
    check_sample_weight_equivalence_on_dense_data("BongRegressor", est.set_params(dtype="float64"))


@pytest.mark.filterwarnings("ignore:which checks")  # the networks here were not measured
def test_sample_weight_reasons_follow_the_configuration():
    """Each reason is stated when, and only when, its mechanism is present."""
    conjugate = BongRegressor(prior_variance=1.0, dtype="float64")
    assert expected_failed_checks(conjugate) == {}
    assert expected_failed_checks(conjugate.set_params(family="dlr", rank=9)) == {}
    reason = expected_failed_checks(BongRegressor(prior_variance=1.0, dtype="float32"))[SAMPLE_WEIGHT_CHECK]
    assert "float32" in reason and "with dtype='float64' it passes" in reason
    cases = {
        "bank of filters": {"prior_variance": "auto"},
        "forgetting": {"drift": 0.99},
        "linearises": {"hidden_layer_sizes": 4},
        "rank-R": {"family": "dlr", "rank": 8},
        "diagonal": {"family": "diag"},
        "Student-t": {"likelihood": "student_t"},
        "empirical Fisher": {"hessian": "lin_ef"},
        "Monte Carlo": {"hessian": "mc_ef"},
    }
    for word, params in cases.items():
        reason = expected_failed_checks(BongRegressor(**{"prior_variance": 1.0, "dtype": "float64", **params}))
        assert word in reason[SAMPLE_WEIGHT_CHECK], word
        assert "float32" not in reason[SAMPLE_WEIGHT_CHECK]
    assert "bank" in expected_failed_checks(BongRegressor(prior_variance="bank", hidden_layer_sizes=4))[
        SAMPLE_WEIGHT_CHECK
    ]
    assert "bank" not in expected_failed_checks(BongRegressor(hidden_layer_sizes=4))[SAMPLE_WEIGHT_CHECK]
    for est in (BongClassifier(), BongPoissonRegressor()):
        assert "not conjugate" in expected_failed_checks(est)[SAMPLE_WEIGHT_CHECK]
    for est in (VariationalRegressor(), VariationalClassifier()):
        assert list(expected_failed_checks(est)) == [SAMPLE_WEIGHT_CHECK]
    with pytest.raises(TypeError, match="skbong estimator"):
        expected_failed_checks(object())


def test_which_configurations_are_measured_only():
    assert not measured_only(BongRegressor()) and not measured_only(BongClassifier())
    assert measured_only(BongRegressor(hidden_layer_sizes=4))
    assert measured_only(BongPoissonRegressor())
    assert measured_only(BongClassifier(rule="bog"))


def test_which_configurations_may_refuse_rows():
    assert not may_refuse_rows(BongRegressor())
    assert not may_refuse_rows(BongPoissonRegressor())  # backtrack=20 by default
    assert may_refuse_rows(BongPoissonRegressor(backtrack=0))
    assert may_refuse_rows(BongClassifier(family="full_moment"))
    assert not may_refuse_rows(BongClassifier(family="full_moment", backtrack=20))
    assert may_refuse_rows(BongClassifier(family="full_moment", rule="bog", backtrack=20))
    assert may_refuse_rows(BongRegressor(rule="bbb"))
    assert not may_refuse_rows(VariationalRegressor())


def test_poor_score_tag_marks_the_plain_gradient_rules():
    for cls, face in ((BongRegressor, "regressor_tags"), (BongClassifier, "classifier_tags")):
        for rule, poor in (("bong", False), ("blr", False), ("bog", True), ("bbb", True)):
            assert getattr(get_tags(cls(rule=rule)), face).poor_score is poor
    assert not get_tags(VariationalRegressor()).regressor_tags.poor_score
