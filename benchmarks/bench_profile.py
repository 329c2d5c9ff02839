"""Where a step's time goes: the compiled stream with pieces removed, timed interleaved.

For each headline case the same 512-step stream is compiled in five variants and the
variants are run in turn until the time budget is spent (so that every variant sees the
same machine load), keeping the fastest run of each:

* ``shipped``: ``engine.run_stream`` as the estimators call it;
* ``no check``: the update applied without the validity check and state selection
  (what a step costs if a non-finite update may corrupt the belief);
* ``no outputs``: without the prequential log-likelihood and plugin outputs;
* ``update only``: neither; the algorithm alone, as research code times it;
* ``loop only``: the loop with its carry and per-step slicing, and no step at all
  (the fixed cost of one iteration of XLA's CPU while loop).

The differences are the cost of each piece; ``update only`` is the figure to compare
with the authors' code, which neither checks its updates nor scores the stream.

``MFLOP`` is the ``update only`` step's floating-point work as XLA's cost analysis counts
it (a loop's body once: one step; LAPACK calls such as the dlr family's k × k
eigendecomposition count nothing), and ``GFLOP/s`` that work over the step's time.
``product GFLOP/s`` is the rate of the step's largest matrix product alone, compiled
by itself and run 256 times in a loop: for the dlr family W̃ᵀ [W̃, Υ⁻¹ W̃], k × P by P × 2k (k = R + C), the Gram
products every step forms; for the full family Σ b, P × P by P × 1.

Usage: ``python benchmarks/bench_profile.py [--quick] [--out FILE] [--budget SECONDS]``
"""

from functools import partial

import jax
import jax.numpy as jnp
from _common import E, block, interleaved, load_note, make_problem, parser, table, write_json
from bench_steps import HEADLINE as STEPS_HEADLINE

# bench_steps' headline BONG cases
CASES = [(case, family) for case, family, rule, _, _ in STEPS_HEADLINE if rule == "bong"]
STEPS = 512


def make_step(check, outputs):
    """A stream step with the validity check and the prequential outputs on or off."""

    def step(config, state, mean0, hyper, x, y, w, key):
        family = config.impl.family
        predicted = family.predict(state, mean0, hyper) if config.dynamic else state
        if outputs:
            f = config.model.apply(predicted.mean, x)
            log_lik = jax.vmap(config.impl.likelihood.log_prob,
                               in_axes=(0, 0, None))(y, f, hyper.obs_var)
        else:
            f, log_lik = jnp.zeros(y.shape, x.dtype), jnp.zeros(w.shape, x.dtype)
        new = E.update(config, predicted, x, y, w, hyper, key)
        if not check:
            return new, (log_lik, f, jnp.array(True))
        ok = family.is_valid(new)
        keep = jnp.any(w != 0) & ok
        new = jax.tree_util.tree_map(lambda a, b: jnp.where(keep, a, b), new, state)
        return new, (log_lik, f, ok)

    return step


def loop_only(config, state, mean0, hyper, x, y, w, key):
    """No step: the carry passes through; the outputs take this step's rows."""
    return state, (w, y, jnp.any(w != 0))


@partial(jax.jit, static_argnames=("config", "step"))
def run(config, step, state, mean0, hyper, xs, ys, ws, key):
    """The loop of ``engine.run_stream`` around ``step``."""
    n = xs.shape[0]
    dtype = state.mean.dtype
    out0 = (jnp.zeros(ws.shape, dtype), jnp.zeros(ys.shape, dtype), jnp.ones(n, bool))

    def body(t, carry):
        belief, (ll, f, ok) = carry
        belief, (llt, ft, okt) = step(config, belief, mean0, hyper, xs[t], ys[t], ws[t],
                                      jax.random.fold_in(key, t))
        return belief, (ll.at[t].set(llt), f.at[t].set(ft), ok.at[t].set(okt))

    return jax.lax.fori_loop(0, n, body, (state, out0))


VARIANTS = {
    "no check": make_step(check=False, outputs=True),
    "no outputs": make_step(check=True, outputs=False),
    "update only": make_step(check=False, outputs=False),
    "loop only": loop_only,
}


def step_mflop(cfg, state, mean0, hyper, xs, ys, ws, key):
    """MFLOP of one ``update only`` step as XLA's cost analysis counts them (the loop's
    body once)."""
    compiled = run.lower(cfg, VARIANTS["update only"], state, mean0, hyper, xs, ys, ws,
                         key).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    return cost["flops"] / 1e6


PRODUCTS = 256


@partial(jax.jit, static_argnames=("count",))
def _products(a, b, count):
    """``count`` products a x in a loop, one dispatch for all of them; each x is b plus
    a scalar of the last product (so that no product can be hoisted out of the loop or
    run beside another: a step's products wait for each other too)."""

    def body(i, x):
        return b + 1e-9 * jnp.sum((a @ x)[0])

    return jax.lax.fori_loop(0, count, body, b)


def product_gflops(m, k, n, budget=1.0):
    """GFLOP/s of an (m × k) by (k × n) float32 product compiled alone, the fastest of
    :data:`PRODUCTS` in a loop (the call's dispatch shared among them)."""
    a, b = jnp.ones((m, k), jnp.float32), jnp.ones((k, n), jnp.float32)
    block(_products(a, b, PRODUCTS))
    best = interleaved({"products": lambda: _products(a, b, PRODUCTS)}, budget)["products"]
    return 2.0 * m * k * n * PRODUCTS / best / 1e9


def largest_product(cfg, state):
    """(m, k, n) of the step's largest matrix product (see the module docstring)."""
    p = state.mean.shape[0]
    if hasattr(state, "prec_lr"):
        k = state.prec_lr.shape[1] + cfg.model.n_outputs
        return k, p, 2 * k
    return p, p, 1


def profile(case, family, budget):
    cfg, state, mean0, hyper, (xs, ys, ws) = make_problem(case, family, steps=STEPS)
    key = jax.random.PRNGKey(0)
    mflop = step_mflop(cfg, state, mean0, hyper, xs, ys, ws, key)
    calls = {"shipped": lambda: E.run_stream(cfg, state, mean0, hyper, xs, ys, ws, 0, key)}
    for name, step in VARIANTS.items():
        calls[name] = partial(run, cfg, step, state, mean0, hyper, xs, ys, ws, key)
    for fn in calls.values():
        block(fn())  # compile
    us = {name: t / STEPS * 1e6 for name, t in interleaved(calls, budget).items()}
    row = {"case": case, "P": int(state.mean.shape[0]), "family": family, **us}
    row["check"] = us["shipped"] - us["no check"]
    row["outputs"] = us["shipped"] - us["no outputs"]
    row["MFLOP"] = mflop
    row["GFLOP/s"] = mflop / us["update only"] * 1e3
    row["product GFLOP/s"] = product_gflops(*largest_product(cfg, state))
    return row


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--budget", type=float, default=None,
                   help="seconds of interleaved runs per case (default 20, --quick 6)")
    args = p.parse_args()
    budget = args.budget or (6.0 if args.quick else 20.0)
    rows = []
    for case, family in CASES:
        rows.append(profile(case, family, budget))
        print(f"{case} {family}: " + ", ".join(
            f"{k} {rows[-1][k]:.2f}" for k in ["shipped", *VARIANTS]), flush=True)
    note = load_note()
    print(f"\n== µs per step, fastest of interleaved runs ==  ({note})")
    cols = ["case", "P", "family", "shipped", *VARIANTS, "check", "outputs", "MFLOP",
            "GFLOP/s", "product GFLOP/s"]
    fmt = {c: "{:.2f}" for c in cols[3:]}
    fmt.update({"MFLOP": "{:.3f}", "GFLOP/s": "{:.1f}", "product GFLOP/s": "{:.1f}"})
    table(rows, cols, fmt)
    write_json({"budget_s": budget, "steps": STEPS, "load": note, "rows": rows},
               "profile_quick.json" if args.quick else "profile.json", args.out)


if __name__ == "__main__":
    main()
