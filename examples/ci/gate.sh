#!/usr/bin/env bash
# Gate a model release on pace-cert's exit codes.
#
#   examples/ci/gate.sh MODEL.onnx TRAIN.csv OUT_DIR [compress flags, e.g. --eta 0.1 --time-limit 600]
#
# compress writes OUT_DIR/compressed.onnx + certificate.json; this script then has
# `pace-cert verify` re-prove the certificate independently and writes
# OUT_DIR/report.html for the auditor. Its own exit code:
#   0  ship OUT_DIR/compressed.onnx: a smaller model, certified and re-verified
#      (or, with ALLOW_UNCHANGED=1, the original unchanged when nothing smaller was certified)
#   1  refuted: the certificate does not hold (never ship)
#   2  inconclusive: nothing smaller was certified; OUT_DIR holds the original unchanged
#   3  bad input (model, data, flags): fix the inputs
#   4  anything else (an internal error of pace-cert: report it)
# Environment: PACE_CERT (the pace-cert command, default: pace-cert on PATH),
# ALLOW_UNCHANGED=1 (exit 0 rather than 2 when the original is kept).
set -uo pipefail

if [ $# -lt 3 ]; then
    echo "usage: $0 MODEL.onnx TRAIN.csv OUT_DIR [compress flags...]" >&2
    exit 3
fi
MODEL=$1 DATA=$2 OUT=$3
shift 3
PACE_CERT=${PACE_CERT:-pace-cert}

"$PACE_CERT" compress "$MODEL" --data "$DATA" --out "$OUT" "$@"
code=$?
case $code in
    0) echo "gate: compress certified a smaller model" ;;
    2) echo "gate: compress certified nothing smaller; $OUT holds the original unchanged" ;;
    3) echo "gate: bad input (see the error above)"; exit 3 ;;
    *) echo "gate: compress failed (exit $code)"; exit 4 ;;
esac

"$PACE_CERT" verify "$MODEL" "$OUT/compressed.onnx" "$OUT/certificate.json" \
    --data "$DATA" --probe 20000 --json > "$OUT/verify.json"
verified=$?
"$PACE_CERT" report "$OUT/certificate.json" --out "$OUT/report.html" || exit 4

case $code/$verified in
    0/0) echo "gate: verified; ship $OUT/compressed.onnx (report: $OUT/report.html)"; exit 0 ;;
    */1) echo "gate: REFUTED (see $OUT/verify.json); do not ship"; exit 1 ;;
    2/2)
        if [ "${ALLOW_UNCHANGED:-0}" = 1 ]; then
            echo "gate: keeping the original (ALLOW_UNCHANGED=1)"; exit 0
        fi
        echo "gate: inconclusive; try a larger --eta/--delta or a longer --time-limit"; exit 2 ;;
    0/2) echo "gate: verify's time limit stopped the proof; not verified"; exit 2 ;;
    */3) echo "gate: verify rejected its inputs (see above)"; exit 3 ;;
    *) echo "gate: unexpected exit codes (compress $code, verify $verified)"; exit 4 ;;
esac
