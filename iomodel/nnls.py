"""Non-negative least squares over numpy alone: min ||A x - b|| subject to x >= 0.

The calibration fits (``iomodel.calibrate``, ``iomodel.intrace``, ``compression_model.calibrate`` and
``compression_model.timemodel``) need only this from SciPy, whose 143 MB would be a third of the tool's
install (issue 31). The method is Lawson and Hanson's active set algorithm (Solving Least Squares
Problems, 1974, chapter 23), as in ``scipy.optimize.nnls``: move the variable with the largest gradient
into the passive set, solve the unconstrained least squares problem on that set, and step back along the
segment to the last feasible point when a passive variable would turn negative. The problems here are
small (a few dozen columns), so each step's least-squares solve is a plain ``numpy.linalg.lstsq``.
"""
from __future__ import annotations

import numpy as np


def nnls(A, b, maxiter: int | None = None) -> tuple[np.ndarray, float]:
    """``(x, ||A x - b||)`` with ``x >= 0`` minimising the residual (``scipy.optimize.nnls``'s contract).

    ``maxiter``: steps allowed (default 3 x columns); RuntimeError when they do not suffice."""
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    if A.ndim != 2 or b.ndim != 1 or A.shape[0] != b.shape[0]:
        raise ValueError(f"nnls: A {A.shape} and b {b.shape} do not match")
    m, n = A.shape
    maxiter = 3 * n if maxiter is None else int(maxiter)
    x = np.zeros(n)
    if n == 0 or m == 0:
        return x, float(np.linalg.norm(b))
    # a gradient entry counts as positive past rounding of A_j . r, column by column (columns here span 1 .. 1e9)
    tol = 10 * max(m, n) * np.finfo(float).eps * np.linalg.norm(A, axis=0) * np.linalg.norm(b)
    passive = np.zeros(n, dtype=bool)
    w = A.T @ b
    steps = 0
    blocked = np.zeros(n, dtype=bool)
    while True:
        free = ~passive & ~blocked & (w > tol)
        if not free.any():
            break
        j = int(np.argmax(np.where(free, w / np.maximum(tol, np.finfo(float).tiny), -np.inf)))
        passive[j] = True
        s = _solve_on(A, b, passive)
        if s[j] <= 0:  # its gradient was rounding (Lawson and Hanson's step 6): leave it out until x moves
            passive[j] = False
            blocked[j] = True
            continue
        blocked[:] = False
        while (s[passive] <= 0).any():
            steps += 1
            if steps > maxiter:
                raise RuntimeError(f"nnls: no solution within {maxiter} steps")
            neg = passive & (s <= 0)
            ratios = x[neg] / np.maximum(x[neg] - s[neg], np.finfo(float).tiny)
            k = np.flatnonzero(neg)[int(np.argmin(ratios))]
            x = x + float(ratios.min()) * (s - x)
            # the variable that reached zero first leaves, and any other passive one at zero with it
            passive[k] = False
            passive &= x > 0
            x[~passive] = 0.0
            s = _solve_on(A, b, passive)
        x = s
        w = A.T @ (b - A @ x)
        steps += 1
        if steps > maxiter:
            raise RuntimeError(f"nnls: no solution within {maxiter} steps")
    return x, float(np.linalg.norm(A @ x - b))


def _solve_on(A: np.ndarray, b: np.ndarray, passive: np.ndarray) -> np.ndarray:
    """Unconstrained least squares on the passive columns; zero elsewhere."""
    s = np.zeros(A.shape[1])
    if passive.any():
        s[passive] = np.linalg.lstsq(A[:, passive], b, rcond=None)[0]
    return s
