"""The fitted signature: the structural parameters of a fitted estimator, by value.

A fitted belief is tied to the parameters that fix its shape or its compiled program
(``STRUCTURAL`` in :mod:`skbong._online.base` and :mod:`skbong._batch.base`); changing one of
them requires a new ``fit``. They are compared by value, never by ``repr``, which holds a
function's or an object's memory address and so changes in a copy or another process.
"""

import numpy as np


def structural_signature(estimator, names):
    """The values of an estimator's structural parameters, to be compared with ``==``.

    ``hidden_layer_sizes`` is read as the estimator reads it, an int as one layer
    (``[4]``, ``(4,)``, ``np.array([4])`` and ``4`` are equal); numbers compare by value
    (``np.int64(5) == 5``). A user ``model`` (a pair of functions, or an object with
    ``.init`` and ``.apply``) compares by its own ``==``: identity unless its class
    defines equality. Identity survives ``pickle``, ``copy.deepcopy``, another process
    and joblib's workers: the parameter and the fitted signature are copied in one
    object graph, so the copy holds one object in both (and a module-level function is
    pickled by reference, as the module's own object). A function defined again under
    the same name (a re-run notebook cell, a reloaded module) is another model, whose
    shapes may differ: refused.

    Parameters
    ----------
    estimator : BaseEstimator
        The estimator (its ``get_params(deep=False)`` are read).
    names : tuple of str
        The structural parameters, in order.

    Returns
    -------
    tuple of (str, object)
        ``(name, value)`` for each name.
    """
    params = estimator.get_params(deep=False)
    if "hidden_layer_sizes" in params:  # a new list: a later in-place edit still shows
        sizes = np.atleast_1d(np.asarray(params["hidden_layer_sizes"], dtype=object))
        params["hidden_layer_sizes"] = sizes.tolist()
    return tuple((name, params[name]) for name in names)
