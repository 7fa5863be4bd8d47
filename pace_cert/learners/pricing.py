"""Pricing: generate improving learners from the L1 duals (paper §3, Proposition 1).

With duals v(x, k) >= 0 of the L1 rows, a tree h has reduced cost

    c(h) = 1 - sum_x sum_{k != y0(x)} v(x, k) (h_y0(x)(x) - h_k(x))
         = 1 - sum_leaves sum_c h_c(leaf) * g_c(leaf),

    g_c(leaf) = sum_{x in leaf, y0(x) = c} sum_{k != c} v(x, k)
              - sum_{x in leaf, y0(x) != c} v(x, c).

For a fixed partition the best leaf values in the family (class distributions or hard
votes: the simplex) are one-hot on argmax_c g_c(leaf) — closed form. Since the g_c of a
leaf sum to zero, max_c g_c >= 0 and the best tree value is sum_leaves max_c g_c.

* depth 1 (stumps): every feature and every cell boundary is enumerated with prefix
  sums — exact over all stumps on the sample set (samples are cell representatives, so
  any other threshold induces one of these partitions). "No improving stump" is then a
  proof: the pricing kind is "exact".
* depth 2: every root split × the best split of each child, from per-cell histograms
  with prefix sums (``exact_depth2``, O(F·(nFC + U²FC)) with U distinct cells per
  feature) — also exact, so "no improving learner" is a proof for depth-2 families.
* deeper trees: candidates from scikit-learn CART on dual-weighted samples (several
  seeds and per-class-pair targets) and a greedy builder on the exact objective; the
  best reduced cost wins; the kind is "heuristic".

Thresholds are snapped to existing cell boundaries so new trees never refine the
feature cells (the oracle's domain stays fixed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pace_cert.model.ensemble import LEAF, Tree
from pace_cert.region.domain import FeatureDomain

TOL = 1e-6


def dual_matrix(duals: np.ndarray, y0: np.ndarray, k: int) -> np.ndarray:
    """V[i, c] = dual of row (x_i, c); 0 at c = y0(x_i). Rows ordered as in margin_rows."""
    n = len(y0)
    V = np.zeros((n, k))
    mask = np.ones((n, k), bool)
    mask[np.arange(n), y0] = False
    V[mask] = duals[: n * (k - 1)]
    return V


def gains(V: np.ndarray, y0: np.ndarray) -> np.ndarray:
    """G[i, c]: contribution of sample i to g_c of the leaf holding it."""
    n = V.shape[0]
    G = -V.copy()
    G[np.arange(n), y0] = V.sum(axis=1)
    return G


def reduced_cost(tree: Tree, X: np.ndarray, G: np.ndarray) -> float:
    """Exact c(h) = 1 - sum_i sum_c h_c(x_i) G[i, c] for a tree with given leaf values."""
    H = tree.value[tree.apply(X)]
    return float(1.0 - np.sum(H * G))


@dataclass(frozen=True)
class PricedTree:
    tree: Tree
    reduced_cost: float
    source: str


def _leaf_tree(feature, threshold, left, right, values) -> Tree:
    return Tree(
        np.asarray(feature, np.int64),
        np.asarray(threshold, np.float32),
        np.asarray(left, np.int64),
        np.asarray(right, np.int64),
        np.asarray(values, np.float64),
    )


def _onehot(g: np.ndarray) -> np.ndarray:
    v = np.zeros_like(g)
    v[int(np.argmax(g))] = 1.0
    return v


def best_split(cells: np.ndarray, G: np.ndarray, domain: FeatureDomain, idx: np.ndarray):
    """Best single split of samples ``idx`` on the exact objective.

    Returns (value, feature, threshold) with value = max_c g_c(left) + max_c g_c(right),
    or None when no split separates the samples.
    """
    best = None
    Gi = G[idx]
    for f in range(domain.n_features):
        th = domain.thresholds[f]
        if len(th) == 0:
            continue
        c = cells[idx, f]
        order = np.argsort(c, kind="stable")
        cs = c[order]
        pref = np.cumsum(Gi[order], axis=0)
        total = pref[-1]
        # boundaries between distinct consecutive cells: split "cell <= cs[j]"
        cut = np.flatnonzero(cs[1:] != cs[:-1])
        if len(cut) == 0:
            continue
        left = pref[cut]
        val = left.max(axis=1) + (total - left).max(axis=1)
        j = int(np.argmax(val))
        if best is None or val[j] > best[0] + 1e-12:
            # x <= theta_{cell+1} (0-based threshold index = cell) keeps cells <= cs[cut[j]]
            best = (float(val[j]), f, th[int(cs[cut[j]])])
    return best


def exact_stump(X: np.ndarray, G: np.ndarray, domain: FeatureDomain) -> PricedTree | None:
    """The best depth-1 tree over every feature and cell boundary (exact)."""
    cells = domain.cell_index(X)
    res = best_split(cells, G, domain, np.arange(len(X)))
    if res is None:
        return None
    _, f, th = res
    go_left = X[:, f] <= th
    vals = np.zeros((3, G.shape[1]))
    vals[1] = _onehot(G[go_left].sum(axis=0))
    vals[2] = _onehot(G[~go_left].sum(axis=0))
    t = _leaf_tree([f, LEAF, LEAF], [th, 0, 0], [1, LEAF, LEAF], [2, LEAF, LEAF], vals)
    return PricedTree(t, reduced_cost(t, X, G), "exact-stump")


def _rank_cells(cells: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Per feature, the rank of each sample's cell among the distinct cells present."""
    uniq, ranks = [], np.empty_like(cells)
    for f in range(cells.shape[1]):
        u, inv = np.unique(cells[:, f], return_inverse=True)
        uniq.append(u)
        ranks[:, f] = inv
    return ranks, uniq


def _best_child_splits(H: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For histograms H[j, g, u, c] (subset j, feature g, cell rank u, class c): the best
    value max_c left + max_c right over the splits "rank <= u" and its flat (g, u) index.
    u = last rank sends everything left, i.e. a leaf."""
    P = np.cumsum(H, axis=2)
    tot = P[:, :, -1:, :]
    val = P.max(axis=3) + (tot - P).max(axis=3)
    flat = val.reshape(len(val), -1)
    arg = flat.argmax(axis=1)
    return flat[np.arange(len(flat)), arg], arg


def exact_depth2(
    X: np.ndarray, G: np.ndarray, domain: FeatureDomain, chunk: int = 2_000_000
) -> PricedTree | None:
    """The best tree of depth <= 2 over every root split and every child split (exact).

    Samples are cell representatives, so any threshold induces the same partition of the
    samples as some cell boundary; with one-hot leaves (optimal on the simplex) the value
    of a tree is sum_leaves max_c g_c. For each root feature f, histograms of G per (root
    cell rank, child feature, child cell rank) are built with one ``bincount``; prefix
    sums over the root rank give every root split's two children at once, and prefix
    sums over the child rank every child split. Work O(F * (n F C + U^2 F C)) with U the
    number of distinct cells per feature among the samples; memory is bounded by
    processing the child features in chunks of about ``chunk`` histogram entries.
    """
    n, k = G.shape
    if n == 0:
        return None
    cells = domain.cell_index(X)
    ranks, uniq = _rank_cells(cells)
    F = cells.shape[1]
    U = max(len(u) for u in uniq)
    best: tuple[float, int, int, int, int] | None = None  # value, f, j, left gu, right gu
    for f in range(F):
        uf = len(uniq[f])
        if uf < 2:
            continue
        r = ranks[:, f]
        per_g = uf * U * k
        step = max(1, chunk // max(per_g, 1))
        vals_l = np.full(uf - 1, -np.inf)
        vals_r = np.full(uf - 1, -np.inf)
        arg_l = np.zeros(uf - 1, np.int64)
        arg_r = np.zeros(uf - 1, np.int64)
        for g0 in range(0, F, step):
            gs = np.arange(g0, min(F, g0 + step))
            idx = (r[:, None] * len(gs) + (gs - g0)[None, :]) * U + ranks[:, gs]
            size = uf * len(gs) * U
            H = np.stack(
                [
                    np.bincount(idx.ravel(), np.repeat(G[:, c], len(gs)), minlength=size)
                    for c in range(k)
                ],
                axis=-1,
            ).reshape(uf, len(gs), U, k)
            L = np.cumsum(H, axis=0)
            left = L[:-1]
            right = L[-1:] - left
            for vals, args, sub in ((vals_l, arg_l, left), (vals_r, arg_r, right)):
                v, a = _best_child_splits(sub)
                better = v > vals + 1e-12
                vals[better] = v[better]
                args[better] = a[better] + g0 * U
        tot = vals_l + vals_r
        j = int(np.argmax(tot))
        if best is None or tot[j] > best[0] + 1e-12:
            best = (float(tot[j]), f, j, int(arg_l[j]), int(arg_r[j]))
    if best is None:
        return None
    _, f, j, gl, gr = best
    th_root = domain.thresholds[f][int(uniq[f][j])]
    go_left = ranks[:, f] <= j
    feature, threshold, left, right = [f], [th_root], [1], [-1]
    nodes = []

    def child(mask: np.ndarray, gu: int) -> int:
        g, u = divmod(gu, U)
        node = len(feature)
        sub = ranks[mask, g]
        if len(sub) == 0 or u >= len(uniq[g]) - 1 or (sub <= u).all() or (sub > u).all():
            feature.append(LEAF)
            threshold.append(0.0)
            left.append(LEAF)
            right.append(LEAF)
            nodes.append((node, mask))
            return node
        feature.append(g)
        threshold.append(domain.thresholds[g][int(uniq[g][u])])
        left.append(node + 1)
        right.append(node + 2)
        for m in (mask & (ranks[:, g] <= u), mask & (ranks[:, g] > u)):
            feature.append(LEAF)
            threshold.append(0.0)
            left.append(LEAF)
            right.append(LEAF)
            nodes.append((len(feature) - 1, m))
        return node

    child(go_left, gl)
    right[0] = child(~go_left, gr)
    values = np.zeros((len(feature), k))
    for node, m in nodes:
        values[node] = _onehot(G[m].sum(axis=0))
    t = _leaf_tree(feature, threshold, left, right, values)
    return PricedTree(t, reduced_cost(t, X, G), "exact-depth2")


def greedy_tree(X: np.ndarray, G: np.ndarray, domain: FeatureDomain, depth: int) -> Tree:
    """Top-down tree on the exact objective (each split maximises its own children)."""
    cells = domain.cell_index(X)
    feature, threshold, left, right, values = [], [], [], [], []

    def grow(idx: np.ndarray, d: int) -> int:
        node = len(feature)
        feature.append(LEAF)
        threshold.append(0.0)
        left.append(LEAF)
        right.append(LEAF)
        values.append(_onehot(G[idx].sum(axis=0)))
        if d == 0 or len(idx) < 2:
            return node
        res = best_split(cells, G, domain, idx)
        if res is None:
            return node
        _, f, th = res
        go = X[idx, f] <= th
        feature[node], threshold[node] = f, th
        values[node] = np.zeros(G.shape[1])
        left[node] = grow(idx[go], d - 1)
        right[node] = grow(idx[~go], d - 1)
        return node

    grow(np.arange(len(X)), depth)
    return _leaf_tree(feature, threshold, left, right, values)


def snap_sklearn_tree(est, X: np.ndarray, G: np.ndarray, domain: FeatureDomain) -> Tree:
    """Convert a fitted DecisionTreeClassifier to the IR with thresholds snapped to cell
    boundaries (same partition of the samples) and optimal one-hot leaf values."""
    t = est.tree_
    n = t.node_count
    feature = np.where(t.children_left == -1, LEAF, t.feature).astype(np.int64)
    threshold = np.zeros(n, np.float32)
    for node in np.flatnonzero(t.children_left != -1):
        f = int(t.feature[node])
        below = X[:, f][X[:, f] <= t.threshold[node]]
        a = below.max() if len(below) else X[:, f].min()
        th = domain.thresholds[f]
        j = int(np.searchsorted(th, np.float32(a), side="left"))
        threshold[node] = th[min(j, len(th) - 1)] if len(th) else np.float32(a)
    left = np.where(t.children_left == -1, LEAF, t.children_left).astype(np.int64)
    right = np.where(t.children_right == -1, LEAF, t.children_right).astype(np.int64)
    tree = _leaf_tree(feature, threshold, left, right, np.zeros((n, G.shape[1])))
    leaves = tree.apply(X)
    values = np.zeros((n, G.shape[1]))
    for leaf in tree.leaves:
        values[leaf] = _onehot(G[leaves == leaf].sum(axis=0))
    return _leaf_tree(feature, threshold, left, right, values)


def heuristic_candidates(
    X: np.ndarray,
    y0: np.ndarray,
    G: np.ndarray,
    V: np.ndarray,
    domain: FeatureDomain,
    depth: int,
    seed: int,
    n_candidates: int,
) -> list[PricedTree]:
    """CART on dual-weighted samples (several variants) plus the greedy exact builder."""
    from sklearn.tree import DecisionTreeClassifier

    out = [PricedTree(t := greedy_tree(X, G, domain, depth), reduced_cost(t, X, G), "greedy")]
    if len(np.unique(y0)) > 1:  # a tree imitating the original on X^o: good L0 material
        mimic = DecisionTreeClassifier(max_depth=depth, random_state=seed).fit(X, y0)
        t = snap_sklearn_tree(mimic, X, G, domain)
        out.append(PricedTree(t, reduced_cost(t, X, G), "mimic"))
    k = G.shape[1]
    weights = V.sum(axis=1)
    variants: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    if weights.sum() > 0:
        variants.append((np.arange(len(X)), y0, weights))
    for a in range(k):
        for b in range(a + 1, k):
            if k == 2:
                break
            sel = np.flatnonzero((y0 == a) | (y0 == b))
            other = np.where(y0[sel] == a, b, a)
            w = V[sel, other]
            if w.sum() > 0:
                variants.append((sel, y0[sel], w))
    rng = np.random.default_rng(seed)
    for i in range(n_candidates):
        if not variants:
            break
        sel, yy, w = variants[i % len(variants)]
        if len(np.unique(yy)) < 2:
            continue
        est = DecisionTreeClassifier(
            max_depth=depth,
            random_state=int(rng.integers(2**31)),
            max_features=None if i < len(variants) else "sqrt",
        ).fit(X[sel], yy, sample_weight=w)
        t = snap_sklearn_tree(est, X, G, domain)
        out.append(PricedTree(t, reduced_cost(t, X, G), f"cart{i}"))
    return out


def price(
    X: np.ndarray,
    y0: np.ndarray,
    duals: np.ndarray,
    domain: FeatureDomain,
    depth: int,
    n_classes: int,
    seed: int = 0,
    n_candidates: int = 8,
) -> tuple[PricedTree | None, str]:
    """Best learner found and the pricing kind ("exact" for stumps, else "heuristic")."""
    cands, kind = price_all(X, y0, duals, domain, depth, n_classes, seed, n_candidates)
    return (cands[0] if cands else None), kind


def price_all(
    X: np.ndarray,
    y0: np.ndarray,
    duals: np.ndarray,
    domain: FeatureDomain,
    depth: int,
    n_classes: int,
    seed: int = 0,
    n_candidates: int = 8,
) -> tuple[list[PricedTree], str]:
    """Every distinct candidate, best reduced cost first, and the pricing kind."""
    V = dual_matrix(duals, y0, n_classes)
    G = gains(V, y0)
    if depth <= 1:
        best = exact_stump(X, G, domain)
        return ([best] if best is not None else []), "exact"
    cands = heuristic_candidates(X, y0, G, V, domain, depth, seed, n_candidates)
    kind = "heuristic"
    if depth == 2:  # exact over all depth-2 trees; the heuristics add diverse columns
        best = exact_depth2(X, G, domain)
        cands += [] if best is None else [best]
        kind = "exact"
    cands.sort(key=lambda p: p.reduced_cost)
    out, seen = [], set()
    for c in cands:
        key = c.tree.feature.tobytes() + c.tree.threshold.tobytes() + c.tree.value.tobytes()
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out, kind
