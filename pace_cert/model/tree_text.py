"""A single decision tree for a reader: its rules as indented text (``inspect``) and as
an SVG drawing (the report), the features by the training data's column names.

The rules are the IR's: a split sends a row left when ``feature <= threshold`` (float32,
as onnxruntime compares), a leaf predicts the class of its largest value (ties: the
lowest index, as the compressed model's ArgMax).
"""

from __future__ import annotations

from html import escape

import numpy as np

from pace_cert.model.ensemble import LEAF, Tree

#: trees with more leaves are listed as rules only (a drawing would not be read)
DRAW_LEAVES = 48


def feature_name(f: int, names: list[str] | None) -> str:
    return names[f] if names is not None and 0 <= f < len(names) else f"x[{f}]"


def leaf_class(tree: Tree, node: int, classes) -> str:
    """The label a leaf predicts: its largest value's class (ties: the lowest index)."""
    return str(classes[int(np.argmax(tree.value[node]))])


def tree_rules(tree: Tree, classes, names: list[str] | None = None) -> list[str]:
    """One line per node, depth first, left (``<=``) before right (``>``)::

    |--- age <= 30.5
    |   |--- class: 0
    |--- age >  30.5
    |   |--- class: 1
    """
    lines: list[str] = []
    stack: list[tuple[int, int, str | None]] = [(0, 0, None)]
    while stack:
        node, depth, cond = stack.pop()
        pad = "|   " * max(depth - 1, 0)
        if cond is not None:
            lines.append(f"{pad}|--- {cond}")
        if tree.left[node] == LEAF:
            lines.append(f"{'|   ' * depth}|--- class: {leaf_class(tree, node, classes)}")
            continue
        name = feature_name(int(tree.feature[node]), names)
        th = f"{float(tree.threshold[node]):.9g}"
        stack.append((int(tree.right[node]), depth + 1, f"{name} >  {th}"))
        stack.append((int(tree.left[node]), depth + 1, f"{name} <= {th}"))
    if tree.left[0] == LEAF:  # a single leaf: no condition above it
        return [f"|--- class: {leaf_class(tree, 0, classes)}"]
    return lines


def tree_svg(tree: Tree, classes, names: list[str] | None = None) -> str | None:
    """An inline SVG drawing of ``tree`` (None above :data:`DRAW_LEAVES` leaves): each
    split a box ``feature <= threshold`` with its left child on the left, each leaf a
    box with its class."""
    n_leaves = int(np.sum(tree.left == LEAF))
    if n_leaves > DRAW_LEAVES:
        return None
    x: dict[int, float] = {}
    y: dict[int, int] = {}
    order = 0

    def place(node: int, depth: int) -> float:
        nonlocal order
        y[node] = depth
        if tree.left[node] == LEAF:
            x[node] = float(order)
            order += 1
        else:
            a = place(int(tree.left[node]), depth + 1)
            b = place(int(tree.right[node]), depth + 1)
            x[node] = (a + b) / 2
        return x[node]

    place(0, 0)
    dx, dy, w, h = 120, 70, 112, 34
    width = max(n_leaves, 1) * dx + 10
    height = (max(y.values()) + 1) * dy + 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             'font-family="sans-serif" font-size="11">']  # fmt: skip
    for node in x:
        if tree.left[node] != LEAF:
            for child, tag in ((int(tree.left[node]), "yes"), (int(tree.right[node]), "no")):
                x1, y1 = x[node] * dx + 5 + w / 2, y[node] * dy + 5 + h
                x2, y2 = x[child] * dx + 5 + w / 2, y[child] * dy + 5
                parts.append(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#888"/>')
                parts.append(f'<text x="{(x1 + x2) / 2 + 3}" y="{(y1 + y2) / 2}" '
                             f'fill="#666">{tag}</text>')  # fmt: skip
    for node in x:
        px, py = x[node] * dx + 5, y[node] * dy + 5
        if tree.left[node] == LEAF:
            label, fill = f"class {leaf_class(tree, node, classes)}", "#e8f4e8"
        else:
            name = feature_name(int(tree.feature[node]), names)
            label, fill = f"{name} <= {float(tree.threshold[node]):.6g}", "#eef2fa"
        parts.append(f'<rect x="{px}" y="{py}" width="{w}" height="{h}" rx="4" fill="{fill}" '
                     f'stroke="#557"><title>{escape(label)}</title></rect>')  # fmt: skip
        short = label if len(label) <= 20 else label[:19] + "…"
        parts.append(f'<text x="{px + 4}" y="{py + h / 2 + 4}">{escape(short)}</text>')
    parts.append("</svg>")
    return "".join(parts)
