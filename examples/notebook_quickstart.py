"""pace-cert from a notebook: a forest trained on a DataFrame, compressed, verified, saved.

Run it as a script (``.venv/bin/python examples/notebook_quickstart.py [OUT_DIR]``), or
in Jupyter: ``%run examples/notebook_quickstart.py``, or ``from notebook_quickstart
import *`` with examples/ on the path and then run the cells' functions one by one
(the ``# %%`` markers make it a notebook for Jupytext and VS Code). docs/python-api.md
explains each call.
"""

# %% imports
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import train_test_split

import pace_cert
from pace_cert import zoo


# %% data: a bundled dataset as a DataFrame (the column names go into the certificate)
def load_data() -> tuple[pd.DataFrame, pd.DataFrame, pd.Series, pd.Series]:
    X, y, names = zoo.load_dataset("compas")
    frame = pd.DataFrame(zoo.bin_features(X), columns=names)
    labels = pd.Series(y, name="recidivism")
    return train_test_split(frame, labels, test_size=0.2, stratify=labels, random_state=0)


# %% train a forest as usual
def train(X_train: pd.DataFrame, y_train: pd.Series) -> RandomForestClassifier:
    return RandomForestClassifier(n_estimators=30, max_depth=2, random_state=0).fit(
        X_train, y_train
    )


# %% compress it: a smaller model, proved to agree with the forest wherever the forest
# wins by a vote share above eta = 0.1 (progress shows below the cell in a notebook).
# mode="prune" keeps a subset of the forest's trees and ends in seconds here; the
# default, "pace", also learns new trees and uses more of the time limit.
def compress(forest, X_train, y_train) -> pace_cert.CertifiedModel:
    return pace_cert.compress(forest, X_train, y_train, eta=0.1, mode="prune", time_limit=60)


def main(out: Path) -> int:
    X_train, X_test, y_train, y_test = load_data()
    forest = train(X_train, y_train)
    result = compress(forest, X_train, y_train)
    print(result)  # in a notebook, the last expression `result` shows the same table

    # use it like the forest: labels from onnxruntime, the runtime the proof is about
    labels = result.predict(X_test)
    agree = (labels == forest.predict(X_test)).mean()
    acc, acc_forest = (labels == y_test).mean(), forest.score(X_test, y_test)
    print(f"held-out: agreement with the forest {agree:.4f}, accuracy {acc:.4f} ({acc_forest:.4f})")

    # verify: re-prove the certificate from the two ONNX files, independently
    report = pace_cert.verify(result, X=X_train, y=y_train)
    print(f"verify: {report.status} ({report.message})")

    # save: what `pace-cert compress --out` writes, plus original.onnx
    result.save(out)
    result.report(out / "report.html")
    print(f"saved: {', '.join(sorted(p.name for p in out.iterdir()))}")
    print(f"check it: pace-cert verify {out}/original.onnx {out}/compressed.onnx "
          f"{out}/certificate.json")  # fmt: skip
    return max(result.exit_code, report.exit_code)


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("out/quickstart")))
