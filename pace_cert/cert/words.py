"""Plain-words lines about a certificate's domain and region, shared by compress's
summary, verify's report and the HTML report."""

from __future__ import annotations


def narrowing_lines(dom: dict, names: list[str] | None = None) -> list[str]:
    """What ``--binary infer`` and ``--integer infer`` took out of the domain, naming
    the columns and the flag that puts it back (no line when they took nothing)."""
    lines = []
    if integer := dom.get("integer_features", []):
        lines.append(
            f"integer: {feature_list(integer, names)} took only whole numbers in the "
            "training data, so --integer infer certifies them over the integers only "
            "(other values are outside the proof); --integer none certifies every float32"
        )
    if binary := dom.get("binary_features", []):
        lines.append(
            f"binary: {feature_list(binary, names)} took only 0 and 1 in the training "
            "data, so --binary infer certifies them at 0 and 1 only; --binary none "
            "certifies every float32"
        )
    return lines


#: at most this many feature names are listed on one line
NAMES_SHOWN = 8


def feature_list(features: list[int], names: list[str] | None, limit: int = NAMES_SHOWN) -> str:
    """The features by name (by index when the certificate has no names), the first
    ``limit`` of them and how many more."""
    shown = [names[i] if names else f"feature {i}" for i in features[:limit]]
    more = len(features) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def plausibility_words(delta_abs: float, delta: float) -> str:
    """What ``A(x) >= delta_abs`` means, in words."""
    return (
        f"A(x) >= {delta_abs:.6g}: A(x) is the isolation-forest path-length score (how "
        "deep the plausibility forest's trees isolate x, summed over them); higher is more "
        f"typical, and the region keeps the inputs at least as typical as the "
        f"{1 - delta:.0%} (1 - delta) most typical training rows"
    )
