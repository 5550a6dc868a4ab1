#!/usr/bin/env python3
"""The coefficients of the math library's tanh (crates/relok-compiler/src/math/algo.rs,
`tanh_expm1` in F32 and F64): expm1(2r) ~ 2r + r^2 (c2 + c3 r + ...) on |r| <= 1.02 ln2/4,
minimax for the relative error (Remez exchange, in mpmath at 50 digits).

f32 (5 coefficients): each coefficient rounded to f32 in turn, lowest first, the others
refitted with it fixed; f64 (11): all rounded to f64 at once (the error stays far below
an ulp). Prints each set as algo.rs writes it, and its relative error
after rounding. Needs mpmath (pip install mpmath); a few minutes.
"""
import struct

from mpmath import cos, expm1, log, lu_solve, matrix, mp, mpf, nstr, pi

mp.dps = 50
R = log(2) / 4 * mpf("1.02")


def g(r):
    return expm1(2 * r) / r if r != 0 else mpf(2)


def h(r):
    """(g - 2) / r: what c2 + c3 r + ... approximates."""
    return (g(r) - 2) / r if r != 0 else mpf(2)


def weight(r):
    """The error in h times r / g is the relative error of expm1(2r)."""
    return g(r) / abs(r) if r != 0 else mpf(10) ** 40


def remez(f, basis, grid=3000, iters=60):
    """sum c_j basis_j ~ f on [-R, R], minimising max |error| / weight."""
    n = len(basis) + 1
    pts = [-R + 2 * R * (1 - cos(pi * i / (n - 1))) / 2 for i in range(n)]
    xs = [-R + 2 * R * mpf(i) / grid for i in range(grid + 1)]
    fx = [f(x) for x in xs]
    wx = [weight(x) for x in xs]
    for _ in range(iters):
        a, b = matrix(n, n), matrix(n, 1)
        for i, t in enumerate(pts):
            for j, bf in enumerate(basis):
                a[i, j] = bf(t)
            a[i, n - 1] = (-1) ** i * weight(t)
            b[i] = f(t)
        sol = lu_solve(a, b)
        c = [sol[j] for j in range(n - 1)]
        groups = []
        for x, fv, wv in zip(xs, fx, wx):
            e = (sum(cj * bf(x) for cj, bf in zip(c, basis)) - fv) / wv
            if e == 0:
                continue
            if groups and (groups[-1][1] > 0) == (e > 0):
                if abs(e) > abs(groups[-1][1]):
                    groups[-1] = (x, e)
            else:
                groups.append((x, e))
        while len(groups) > n:
            groups.pop(0 if abs(groups[0][1]) < abs(groups[-1][1]) else -1)
        if len(groups) < n:
            break
        hi, lo = max(abs(e) for _, e in groups), min(abs(e) for _, e in groups)
        pts = [x for x, _ in groups]
        if hi / lo < 1.0001:
            break
    return c


def f32(x):
    return mpf(struct.unpack("f", struct.pack("f", float(x)))[0])


def f64(x):
    return mpf(float(x))


def relative_error(cs, grid=6000):
    rs = [-R + 2 * R * i / grid for i in range(grid + 1)]
    return max(abs((2 + r * sum(c * r**j for j, c in enumerate(cs)) - g(r)) / g(r)) for r in rs)


def one_at_a_time(n, rnd):
    fixed = []
    while len(fixed) < n:
        k = len(fixed)
        rest = remez(lambda r, fixed=fixed: h(r) - sum(c * r**j for j, c in enumerate(fixed)),
                     [(lambda r, j=j: r**j) for j in range(k, n)])
        fixed.append(rnd(rest[0]))
    return fixed


def all_at_once(n, rnd):
    return [rnd(c) for c in remez(h, [(lambda r, j=j: r**j) for j in range(n)])]


for name, cs, unit in [("F32", one_at_a_time(5, f32), 2.0**-24), ("F64", all_at_once(11, f64), 2.0**-53)]:
    e = relative_error(cs)
    print(f"{name}: relative error {nstr(e, 3)} ({nstr(e / unit, 2)} ulp of 1)")
    for c in cs:
        print(f"        {float(c)!r},")
