"""``iomodel.nnls``: the numpy-only NNLS the calibration fits use in place of scipy.optimize.nnls."""
import numpy as np
import pytest

from iomodel.nnls import nnls


def _problems(seed, count=400):
    rng = np.random.default_rng(seed)
    for t in range(count):
        m, n = int(rng.integers(1, 40)), int(rng.integers(1, 20))
        A = rng.standard_normal((m, n))
        if t % 3 == 0:
            A[:, : n // 2] = A[:, :1]  # collinear columns (one mix of terms in every run)
        if t % 5 == 0:
            A = A * 10.0 ** rng.uniform(-3, 6, size=n)  # columns of counts beside byte sums
        if t % 7 == 0:
            A = np.abs(A)
        yield A, rng.standard_normal(m) * 10.0 ** rng.uniform(-3, 3)


@pytest.mark.parametrize("seed", [0, 1])
def test_solution_meets_the_optimality_conditions(seed):
    """Karush-Kuhn-Tucker: x >= 0; the gradient A^T(Ax - b) is ~0 where x > 0 and >= ~0 where x = 0."""
    for A, b in _problems(seed):
        x, rnorm = nnls(A, b, maxiter=50 * A.shape[1] + 100)
        assert (x >= 0).all()
        assert rnorm == pytest.approx(np.linalg.norm(A @ x - b), rel=1e-9, abs=1e-12)
        g = A.T @ (A @ x - b)
        scale = np.linalg.norm(A, axis=0) * max(np.linalg.norm(b), 1e-300)
        assert (g[x == 0] >= -1e-6 * scale[x == 0]).all()
        assert (np.abs(g[x > 0]) <= 1e-6 * scale[x > 0]).all()


def test_residual_equals_scipys():
    optimize = pytest.importorskip("scipy.optimize")
    for A, b in _problems(2):
        n = A.shape[1]
        _, ours = nnls(A, b, maxiter=50 * n + 100)
        _, theirs = optimize.nnls(A, b, maxiter=50 * n + 100)
        assert ours <= theirs + 1e-7 * max(np.linalg.norm(b), 1e-300)


def test_recovers_a_nonnegative_solution_with_zeros():
    rng = np.random.default_rng(3)
    A = rng.uniform(0, 1, (50, 8))
    x_true = np.array([0.0, 2.0, 0.0, 0.5, 3.0, 0.0, 1.0, 0.0])
    x, rnorm = nnls(A, A @ x_true)
    assert np.allclose(x, x_true, atol=1e-9) and rnorm < 1e-9


def test_bad_shapes_and_empty():
    with pytest.raises(ValueError):
        nnls(np.ones((3, 2)), np.ones(4))
    x, r = nnls(np.ones((3, 0)), np.ones(3))
    assert x.shape == (0,) and r == pytest.approx(np.sqrt(3))
