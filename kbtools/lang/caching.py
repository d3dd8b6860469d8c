"""Cache hit rates under a Zipf law of popularity: the numbers behind the formula language's zipf_top(n, c, s)
and zipf_lru(n, c, s). Pure functions of plain numbers; formula.py and interval.py give them their units,
their messages and their ranges.

The model: n distinct items (KV-cache prefixes), item i requested with probability p_i = i^-s / H(n, s), where
H(n, s) = 1^-s + 2^-s + ... + n^-s is the generalised harmonic number; each request independent of the others
(the independent reference model); a cache that holds c items. A fractional n is taken down to a whole number
of items; c may be fractional.

- zipf_top: the cache holds the c most popular items, the best any cache of c items can do under this model:
  H(c, s) / H(n, s). A fractional c holds floor(c) items and that fraction of the next one:
  (H(floor(c), s) + (c - floor(c)) * (floor(c) + 1)^-s) / H(n, s), linear between whole c.
- zipf_lru: a least-recently-used cache of c items, by Che's approximation (Che, Tung and Wang, 2002; why it is
  accurate: Fricker, Robert and Roberts, 2012). Item i is in the cache when it was requested within the last T
  (the cache's characteristic time, in requests), with probability 1 - exp(-p_i T); T is the one for which
  the cache holds c items on average, sum_i (1 - exp(-p_i T)) = c, and the hit rate is
  sum_i p_i (1 - exp(-p_i T)).

Both give 0 for c <= 0, 1 for c >= n, and c / n for s = 0 (every item alike).

How the sums are taken, for n up to 1e9 and past it: the first EXACT_TERMS terms one by one, the rest (K < i
<= n) by the Euler-Maclaurin formula, the integral from K to n plus (f(n) - f(K)) / 2 plus (f'(n) - f'(K)) / 12
(the next term is below 1e-15 of the sum at K = 10,000). The integral of i^-s is closed,
(n^(1-s) - K^(1-s)) / (1 - s), or ln(n / K) at s = 1, computed as one expression that is continuous through
s = 1 (_exp_integral). Che's integrals are not: they are taken over u = ln i, where the integrand e^u (1 -
exp(-z)), z = T p(e^u), is 1 x e^u while z >= 40, z x e^u while z <= e^-30 (both closed, and exact to 1e-13),
and between them by 8-point Gauss-Legendre on panels 0.5 / max(s, 1) wide. T is found on a log scale, x =
ln T, by Newton's method (on ln(count / c), or on ln((n - c) / (n - count)) for a cache of more than half the
items) kept inside a bracket that bisection narrows whenever a step would leave it, until a step moves ln T by
less than 1e-12 (T to 1e-12 relative, unless the count is flat to within its rounding there, as for a cache
a hair short of all of a huge n, where the hit rate hardly depends on T): the same steps every time, so the
same figure.

kbtools/theme/static/calc.js takes the same steps in the same order; keep the two alike (the tests hold them
to 1e-9 of each other).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

EXACT_TERMS = 10_000  # K: the terms summed one by one
MAX_SKEW = 10.0
ARGUMENTS = ("n", "c", "s")
RANGE_SKEWS = 8  # zipf_lru over a range of s: at both ends and 7 points evenly between (see hit_rate_range)

_PANEL = 0.5  # Gauss-Legendre panels are this wide in ln i, divided by max(s, 1)
_SATURATED = math.log(40.0)  # ln z above this: 1 - exp(-z) is 1 to 4e-18
_LINEAR = -30.0  # ln z below this: 1 - exp(-z) is z to 5e-14
_HUGE = 700.0  # ln z above this: exp(z) would overflow; 1 - exp(-z) is 1
_TOLERANCE = 1e-12  # the solver stops when a step moves ln T by less than this
_MAX_STEPS = 200
# 8-point Gauss-Legendre on [-1, 1]: each node is used at +x and -x
_GAUSS = (
    (0.1834346424956498, 0.362683783378362),
    (0.525532409916329, 0.31370664587788727),
    (0.7966664774136267, 0.22238103445337448),
    (0.9602898564975363, 0.10122853629037626),
)


def domain_problem(role: str, low: float, high: float) -> str | None:
    """What argument `role` (n, c or s) must be, when the range low..high (equal for one figure) is not;
    None when it is in the functions' domain."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"a finite {role}"
    if role == "n" and low < 1:
        return "n of at least 1"
    if role == "s" and (low < 0 or high > MAX_SKEW):
        return f"s between 0 and {MAX_SKEW:g}"
    return None


def _checked(n: float, c: float, s: float) -> float:
    """n as a whole number of items; ValueError when an argument is outside the domain."""
    for role, value in zip(ARGUMENTS, (n, c, s), strict=True):
        problem = domain_problem(role, value, value)
        if problem:
            raise ValueError(f"needs {problem}, not {value!r}")
    return float(math.floor(n))


@lru_cache(maxsize=1)
def _logs() -> tuple[float, ...]:
    """ln i for i = 1..K."""
    return tuple(math.log(i) for i in range(1, EXACT_TERMS + 1))


def _exp_integral(k: float, r: float, a: float, b: float) -> float:
    """The integral of e^(k + r u) for u from a to b (a <= b), taken from its larger end so that nothing
    overflows; at r = 0 (s = 1 in H's integral) it is e^k (b - a), which the general form tends to."""
    width = b - a
    if width <= 0:
        return 0.0
    if r == 0:
        return math.exp(k) * width
    rate = abs(r)
    return math.exp(k + r * (b if r > 0 else a)) * -math.expm1(-rate * width) / rate


def harmonic(n: float, s: float) -> float:
    """H(n, s) = sum of i^-s for i = 1..n (n whole): K terms, then Euler-Maclaurin."""
    logs = _logs()
    total = 0.0
    for i in range(int(min(n, EXACT_TERMS))):
        total += math.exp(-s * logs[i])
    if n > EXACT_TERMS:
        a, b = logs[-1], math.log(n)
        f_k, f_n = math.exp(-s * a), math.exp(-s * b)
        total += _exp_integral(0.0, 1.0 - s, a, b) + (f_n - f_k) / 2 + (-s * f_n / n + s * f_k / EXACT_TERMS) / 12
    return total


def _settled(n: float, c: float, s: float) -> tuple[float, float | None]:
    """The whole number of items, and the hit rate where it needs no sum: 0 for an empty cache, 1 for one that
    holds every item, c / n when every item is alike (s = 0); None otherwise."""
    whole = _checked(n, c, s)
    if c <= 0:
        return whole, 0.0
    if c >= whole:
        return whole, 1.0
    if s == 0:
        return whole, c / whole
    return whole, None


@lru_cache(maxsize=4096)
def zipf_top(n: float, c: float, s: float) -> float:
    """The hit rate of a cache holding the c most popular of n items under a Zipf law of exponent s."""
    whole, settled = _settled(n, c, s)
    if settled is not None:
        return settled
    held = float(math.floor(c))
    top = harmonic(held, s) + (c - held) * math.exp(-s * math.log(held + 1))
    return min(1.0, top / harmonic(whole, s))


def _che_sums(x: float, s: float, log_h: float, n: float, log_p: list[float], p: list[float]) -> tuple[float, ...]:
    """At T = e^x: (count, slope, hit) = (sum_i (1 - exp(-p_i T)), its derivative in x, sum_i p_i (1 -
    exp(-p_i T))). log_p and p are ln p_i and p_i of the first K items."""
    count = slope = hit = 0.0
    for i in range(len(log_p)):
        lz = x + log_p[i]
        if lz > _HUGE:
            count += 1.0
            hit += p[i]
            continue
        z = math.exp(lz)
        em = math.expm1(-z)
        count -= em
        slope += z * (1.0 + em)
        hit -= p[i] * em
    if n <= EXACT_TERMS:
        return count, slope, hit
    beta = x - log_h  # ln z at u = ln i is beta - s u
    a, b = math.log(EXACT_TERMS), math.log(n)
    u1 = min(max((beta - _SATURATED) / s, a), b)
    u2 = min(max((beta - _LINEAR) / s, u1), b)
    # z >= 40 on [a, u1]: every item there is in the cache
    count += _exp_integral(0.0, 1.0, a, u1)
    hit += _exp_integral(-log_h, 1.0 - s, a, u1)
    # z <= e^-30 on [u2, b]: 1 - exp(-z) is z
    linear = _exp_integral(beta, 1.0 - s, u2, b)
    count += linear
    slope += linear
    hit += _exp_integral(beta - log_h, 1.0 - 2.0 * s, u2, b)
    # between, Gauss-Legendre
    if u2 > u1:
        panels = math.ceil((u2 - u1) / (_PANEL / max(s, 1.0)))
        half = (u2 - u1) / panels / 2
        for j in range(panels):
            middle = u1 + (2 * j + 1) * half
            for node, weight in _GAUSS:
                for u in (middle - half * node, middle + half * node):
                    z = math.exp(beta - s * u)
                    em = math.expm1(-z)
                    size = weight * half * math.exp(u)
                    count -= size * em
                    slope += size * z * (1.0 + em)
                    hit -= weight * half * math.exp((1.0 - s) * u - log_h) * em
    # Euler-Maclaurin's end corrections, at K and n
    ends = []
    for y in (float(EXACT_TERMS), n):
        ly = math.log(y)
        lz = beta - s * ly
        share = math.exp(-s * ly - log_h)
        if lz > _HUGE:
            ends.append((1.0, 0.0, 0.0, share, -s / y * share))
            continue
        z = math.exp(lz)
        em = math.expm1(-z)
        kept = z * (1.0 + em)  # z exp(-z)
        ends.append((-em, -s / y * kept, kept, -share * em, -s / y * share * (kept - em)))
    (f_k, df_k, g_k, h_k, dh_k), (f_n, df_n, g_n, h_n, dh_n) = ends
    count += (f_n - f_k) / 2 + (df_n - df_k) / 12
    slope += (g_n - g_k) / 2
    hit += (h_n - h_k) / 2 + (dh_n - dh_k) / 12
    return count, slope, hit


@lru_cache(maxsize=4096)
def zipf_lru(n: float, c: float, s: float) -> float:
    """The hit rate of an LRU cache of c items among n under a Zipf law of exponent s, by Che's approximation."""
    whole, settled = _settled(n, c, s)
    if settled is not None:
        return settled
    log_h = math.log(harmonic(whole, s))
    log_p = [-s * log - log_h for log in _logs()[: int(min(whole, EXACT_TERMS))]]
    p = [math.exp(lp) for lp in log_p]

    def sums(x: float) -> tuple[float, ...]:
        return _che_sums(x, s, log_h, whole, log_p, p)

    # T >= c, as the count is at most sum_i p_i T = T; and the count is at least n (1 - exp(-p_n T))
    share = c / whole
    if share < 0.5:  # ln(-ln(1 - c / n)), kept from underflowing when c / n is tiny
        log_t = math.log(c) - math.log(whole) + (math.log(-math.log1p(-share) / share) if share > 0 else 0.0)
    else:
        log_t = math.log(-math.log((whole - c) / whole))
    low, high = math.log(c), log_t + s * math.log(whole) + log_h
    for _ in range(64):  # the sums are approximations: widen the bracket until it holds the root
        if sums(low)[0] <= c:
            break
        low -= 1.0
    for _ in range(64):
        count, slope, _hit = sums(high)
        if count >= c or slope == 0:  # a count that no longer grows: c is within rounding of n
            break
        high += 1.0
    # Newton's method on ln(count / c) while the cache holds at most half the items, from below, and on
    # ln((n - c) / (n - count)) past that, from above: both are close to straight lines in ln T where their
    # root lies (count is T while T is small; n - count dies away like exp(-p_n T) as the cache fills) and
    # bend so that those steps do not overshoot
    fuller = c > whole / 2
    x = high if fuller else low
    for _ in range(_MAX_STEPS):
        count, slope, _hit = sums(x)
        if count == c:
            break
        if count < c:
            low = x
        else:
            high = x
        step = math.nan
        if fuller and whole > count and slope > 0:
            step = (math.log(whole - count) - math.log(whole - c)) * (whole - count) / slope
        elif not fuller and count > 0 and slope > 0:
            step = (math.log(c) - math.log(count)) * count / slope
        if abs(step) < _TOLERANCE:
            x += step
            break
        x = x + step if low < x + step < high else (low + high) / 2
        if high - low < _TOLERANCE:
            break
    return min(1.0, max(0.0, sums(x)[2]))


FUNCTIONS: dict[str, Callable[[float, float, float], float]] = {"zipf_top": zipf_top, "zipf_lru": zipf_lru}


def hit_rate_range(
    name: str, n: tuple[float, float], c: tuple[float, float], s: tuple[float, float]
) -> tuple[float, float]:
    """The least and the greatest hit rate over n, c and s, each a range (low, high). Both functions rise
    with c and fall with n, so c's low end with n's high end gives the least and the other two ends the
    greatest. zipf_top rises with s too. zipf_lru is not known to, so over a range of s it is taken at both
    ends and at 7 points evenly between, and the extremes found are the range: an estimate of the enclosure,
    not a bound (the tests find it rising with s wherever they look)."""
    function = FUNCTIONS[name]
    if name == "zipf_top":
        return function(n[1], c[0], s[0]), function(n[0], c[1], s[1])
    skews = [s[0]] if s[0] == s[1] else [s[0] + (s[1] - s[0]) * k / RANGE_SKEWS for k in range(RANGE_SKEWS)] + [s[1]]
    return min(function(n[1], c[0], x) for x in skews), max(function(n[0], c[1], x) for x in skews)
