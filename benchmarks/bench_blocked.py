"""What the linear-Gaussian filter would gain from conditioning on blocks of rows.

skbong's stream updates the belief one row at a time. For the linear model with
Gaussian noise and the full covariance (the Kalman filter, exact) the rows of a block
could be taken at once: with the block's rows H (B × P), S = H Σ Hᵀ + R I, S = L Lᵀ,

    K = Σ Hᵀ L⁻ᵀ,   μ' = μ + K L⁻¹ (y − H μ),   Σ' = Σ − K Kᵀ,

matrix products instead of B matrix-vector products, and L still gives every row's
one-step-ahead predictive (variance Lᵢᵢ², mean yᵢ − Lᵢᵢ eᵢ, e = L⁻¹ (y − H μ)). This script
times that update for blocks of 16, 32 and 64 rows beside skbong's compiled stream
(``engine.run_stream``, checks and outputs included) and the row update alone, on the
same 512 rows (P = 100, float32), and prints how far each result is from the row
stream's and whether the blocked result of the rows in one call equals, bit for bit,
the result of the same rows in two calls split inside a block. skbong does not take
blocks: its stream gives the same bits however a stream of rows is split into calls
(:doc:`user_guide/practical`), which a blocked update cannot, since the split moves the
block boundaries and so the order of the arithmetic.

Usage: ``python benchmarks/bench_blocked.py [--quick] [--out FILE]``
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from _common import E, block, interleaved, load_note, make_problem, parser, table, write_json

STEPS = 512
BLOCKS = (16, 32, 64)


@partial(jax.jit, static_argnames=("size",))
def blocked(mean, cov, xs, ys, obs_var, size):
    """The Kalman filter over the rows ``xs`` (n, P) in blocks of ``size`` rows (n a
    multiple of it): the mean, covariance and each row's log predictive density."""
    p = mean.shape[0]

    def body(carry, rows):
        mean, cov = carry
        h, y = rows
        cov_h = cov @ h.T  # P × B
        chol = jnp.linalg.cholesky(h @ cov_h + obs_var * jnp.eye(size, dtype=cov.dtype))
        e = jax.scipy.linalg.solve_triangular(chol, y - h @ mean, lower=True)
        gain = jax.scipy.linalg.solve_triangular(chol, cov_h.T, lower=True).T  # Σ Hᵀ L⁻ᵀ
        d = jnp.diagonal(chol)
        log_lik = -0.5 * (e * e + jnp.log(2 * jnp.pi * d * d))
        return (mean + gain @ e, cov - gain @ gain.T), log_lik

    rows = (xs.reshape(-1, size, p), ys.reshape(-1, size))
    (mean, cov), log_lik = jax.lax.scan(body, (mean, cov), rows)
    return mean, cov, log_lik.reshape(-1)


@jax.jit
def by_rows(mean, cov, xs, ys, obs_var):
    """The same filter one row at a time (the update alone, as research code times it)."""

    def body(carry, rows):
        mean, cov = carry
        h, y = rows
        k = cov @ h
        s = h @ k + obs_var
        return (mean + k * ((y - h @ mean) / s), cov - jnp.outer(k, k) / s), None

    (mean, cov), _ = jax.lax.scan(body, (mean, cov), (xs, ys))
    return mean, cov


def _call(belief, h, y, obs_var, size):
    """:func:`blocked` from ``belief`` (mean, covariance, …) over rows padded with zero
    rows to whole blocks, as a call of fewer rows than a block would run."""
    pad = -h.shape[0] % size
    h = jnp.concatenate([h, jnp.zeros((pad, h.shape[1]), h.dtype)])
    y = jnp.concatenate([y, jnp.zeros(pad, y.dtype)])
    return blocked(belief[0], belief[1], h, y, obs_var, size)


def time_blocked(size, budget):
    """µs per row of :func:`blocked` over bench_authors' 512-row P = 100 stream."""
    _, state, _, hyper, (xs, ys, _) = make_problem("linreg100", "full", steps=STEPS)
    h = jnp.concatenate([xs[:, 0], jnp.ones((STEPS, 1), xs.dtype)], axis=1)
    call = partial(blocked, state.mean, state.cov, h, ys[:, 0, 0], hyper.obs_var, size)
    block(call())
    return interleaved({"blocked": call}, budget)["blocked"] / STEPS * 1e6


def main():
    args = parser(__doc__.splitlines()[0]).parse_args()
    print(f"# bench_blocked ({load_note()})")
    cfg, state, mean0, hyper, (xs, ys, ws) = make_problem("linreg100", "full", steps=STEPS)
    key = jax.random.PRNGKey(0)
    # the linear model's rows [x, 1] (its parameters: weights, then the intercept)
    h = jnp.concatenate([xs[:, 0], jnp.ones((STEPS, 1), xs.dtype)], axis=1)
    y, r = ys[:, 0, 0], hyper.obs_var
    shipped = E.run_stream(cfg, state, mean0, hyper, xs, ys, ws, 0, key)
    calls = {
        "skbong stream": lambda: E.run_stream(cfg, state, mean0, hyper, xs, ys, ws, 0, key),
        "rows, update only": lambda: by_rows(state.mean, state.cov, h, y, r),
    }
    for size in BLOCKS:
        calls[f"blocks of {size}"] = partial(blocked, state.mean, state.cov, h, y, r, size)
    for fn in calls.values():
        block(fn())  # compile
    us = {name: t / STEPS * 1e6 for name, t in
          interleaved(calls, 2.0 if args.quick else 8.0).items()}
    rows = []
    for name, value in us.items():
        row = {"update": name, "µs per row": value, "/ stream": value / us["skbong stream"]}
        if name.startswith("blocks"):
            size = int(name.split()[-1])
            mean, cov, _ = blocked(state.mean, state.cov, h, y, r, size)
            row["max |Σ − stream's|"] = float(jnp.max(jnp.abs(cov - shipped[0].cov)))
            # one block of rows in one call, or in two calls split half-way through it
            # (each call's rows padded with zero rows, which condition on nothing)
            start, half = size * (STEPS // size // 2), size // 2
            before = blocked(state.mean, state.cov, h[:start], y[:start], r, size)
            one = _call(before, h[start:start + size], y[start:start + size], r, size)
            two = _call(_call(before, h[start:start + half], y[start:start + half], r, size),
                        h[start + half:start + size], y[start + half:start + size], r, size)
            row["one call = two, bitwise"] = bool(np.array_equal(np.asarray(one[1]),
                                                                 np.asarray(two[1])))
        rows.append(row)
    print(f"\n== linear-Gaussian filter, full covariance, P = {h.shape[1]}, float32, "
          f"{STEPS} rows ({load_note()})")
    table(rows, ["update", "µs per row", "/ stream", "max |Σ − stream's|",
                 "one call = two, bitwise"],
          {"µs per row": "{:.2f}", "/ stream": "{:.2f}", "max |Σ − stream's|": "{:.1e}"})
    write_json({"rows": rows, "steps": STEPS}, "blocked.json", args.out)


if __name__ == "__main__":
    main()
