#!/usr/bin/env bash
# Walk through the CLI on the files `make demo` writes (run from the repository root).
set -euo pipefail
BIN=${BIN:-.venv/bin}
DEMO=${DEMO:-demo-out}
OUT=${OUT:-out}
[ -f "$DEMO/original.onnx" ] || "$BIN/pace-cert" demo --out "$DEMO"
"$BIN/pace-cert" inspect "$DEMO/original.onnx"
"$BIN/pace-cert" compress "$DEMO/original.onnx" --data "$DEMO/train.csv" --out "$OUT/prune" --mode prune --time-limit 30 --quiet
"$BIN/pace-cert" compress "$DEMO/original.onnx" --data "$DEMO/train.csv" --out "$OUT/pace" --eta 0.1 --delta 0.1 --quiet
"$BIN/pace-cert" verify "$DEMO/original.onnx" "$OUT/pace/compressed.onnx" "$OUT/pace/certificate.json" --data "$DEMO/train.csv" --probe 20000
"$BIN/pace-cert" verify "$DEMO/original.onnx" "$OUT/prune/compressed.onnx" "$OUT/prune/certificate.json" --exhaustive --json
"$BIN/pace-cert" report "$OUT/pace/certificate.json" --out "$OUT/pace/report.html"
