#!/usr/bin/env bash
# Alignment error of every lecture attention and the Transformer on the RWTH gold set (issue 62,
# item 3), three seeds each, in the four-pair comparison's design, resumable over sittings:
#  1. the RNN variants: nmt compare on Multi30k de-en (configs/multi30k_de_en_bahdanau.yaml, 600
#     updates, validation every 200, beam 5 on test2016), seeds SEEDS, JOBS runs at a time, in
#     runs/pairs_cpu/de-en beside the four-pair comparison's runs (its seeds 4 and 5 of bahdanau,
#     luong_general, scaled_dot and qkv are reused, not trained again); report in OUT/rnn;
#  2. the Transformer: nmt compare on configs/multi30k_de_en_transformer.yaml (its own 1,500 updates),
#     seeds SEEDS, in runs/aer_transformer; report in OUT/transformer;
#  3. scripts/align_rwth.py over every run (per layer and per head, the diagonal, eflomal three
#     times, its directions joined by grow-diag-final-and) into OUT/align_rwth.jsonl; then the
#     AER-against-BLEU plot and the table (docs_build/aer_table.py).
# A stage whose runs are finished only scores (nmt compare reuses finished runs and resumes unfinished
# ones to the update), so the same command finishes what an earlier sitting began.
#
# The attention variants only: none (whose "attention" is a uniform mean) would add a point to the
# AER-against-BLEU plot that says nothing about which attention aligns better.  Relative paths
# (MIRROR, ARCHIVE, OUT) are read from the repository root.
#
# It calls python3 and nmt as found on the PATH: activate the project's environment first.
#
#   . .venv/bin/activate && MIRROR=../shared/data/multi30k bash scripts/aer_sitting.sh
#   STAGES=rnn MIRROR=... bash scripts/aer_sitting.sh     # one stage: rnn, transformer or align
set -eu
cd "$(dirname "$0")/.."
ARCHIVE=${ARCHIVE:-../shared/data/alignments/DeEnGoldAlignment.tar.gz}
OUT=${OUT:-runs/aer_sitting}
SEEDS=${SEEDS:-4,5,6}
JOBS=${JOBS:-2}
STAGES=${STAGES:-"rnn transformer align"}
VARIANTS=${VARIANTS:-bahdanau,luong_dot,luong_general,luong_concat,scaled_dot,qkv,gaussian,luong_location}
COMMON=(--split test2016 --beam 5 --set train.threads=1 --jobs "$JOBS" --seeds "$SEEDS")
mkdir -p "$OUT"
if [ ! -f data/multi30k/de-en/train.de ]; then
  python3 -m nmt data prepare multi30k --pair de-en --mirror "${MIRROR:?give MIRROR=DIR, the raw Multi30k files}"
fi

for step in $STAGES; do
  echo "=== $step $(date -u +%T)"
  case $step in
    rnn)
      python3 -m nmt compare --config configs/multi30k_de_en_bahdanau.yaml --variants "$VARIANTS" "${COMMON[@]}" \
        --steps 600 --set train.valid_every=200 --runs-dir runs/pairs_cpu/de-en --out "$OUT/rnn" ;;
    transformer)
      python3 -m nmt compare --config configs/multi30k_de_en_transformer.yaml "${COMMON[@]}" \
        --runs-dir runs/aer_transformer --out "$OUT/transformer" ;;
    align)
      runs=()
      for v in ${VARIANTS//,/ }; do for s in ${SEEDS//,/ }; do runs+=("runs/pairs_cpu/de-en/${v//+/_}_s$s"); done; done
      for s in ${SEEDS//,/ }; do runs+=("runs/aer_transformer/transformer_s$s"); done
      # each file is written aside and moved in place once whole: a failure keeps the earlier results
      python3 scripts/align_rwth.py "${runs[@]}" --archive "$ARCHIVE" --per-head --threads 2 --diagonal \
        --eflomal --eflomal-repeats 3 > "$OUT/align_rwth.jsonl.part"
      mv "$OUT/align_rwth.jsonl.part" "$OUT/align_rwth.jsonl"
      python3 scripts/plot_aer_bleu.py "$OUT/align_rwth.jsonl" --out "$OUT/aer_bleu.png" > "$OUT/aer_bleu.json.part"
      mv "$OUT/aer_bleu.json.part" "$OUT/aer_bleu.json"
      python3 docs_build/aer_table.py "$OUT/align_rwth.jsonl" > "$OUT/aer_table.md.part"
      mv "$OUT/aer_table.md.part" "$OUT/aer_table.md" ;;
    *) echo "aer_sitting.sh: unknown stage $step (rnn, transformer or align)" >&2; exit 2 ;;
  esac
done
echo "=== done $(date -u +%T): $OUT"
