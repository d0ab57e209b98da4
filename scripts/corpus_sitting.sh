#!/usr/bin/env bash
# The attention comparisons on the two corpora beyond captions (issue 73), resumable over sittings that
# each add seeds: the five-arm comparison of docs/pairs.md (item 4) on the Europarl sample or Tatoeba
# de-en, and on Europarl the other attention variants and the alignment error of every one (item 2).
#  pairs     nmt compare of bahdanau,none,luong_general,scaled_dot,qkv at 600 updates (validation every
#            200, one thread a run, beam 5 on the corpus's test split), seeds SEEDS, JOBS runs at a time,
#            into runs/corpora-CORPUS/CORPUS-de-en;
#  variants  (europarl) the other lecture attentions (luong_dot, luong_concat, gaussian, luong_location),
#            the same way into the same folder, so each alignment variant is trained once;
#  transformer configs/CORPUS_de_en_transformer.yaml (the Multi30k recipe, 1,500 updates) by
#            nmt compare, seeds SEEDS, into runs/corpora-transformer/CORPUS-de-en (its own folder: collect reads
#            the five arms alone), with its report in OUT/transformer;
#  align     (europarl) scripts/align_rwth.py over the finished attention runs of SEEDS (the Transformer's
#            too, each decoder layer with its heads averaged): both readings,
#            the three merge rules, the scores on seen words, and (unless BASELINES=0) the diagonal and
#            eflomal trained on the Europarl training split; lines appended to OUT/align_rwth.jsonl;
#  collect   docs_build/pairs_table.py --collect over runs/corpora-CORPUS: one JSON line per run the
#            five-arm comparison scored, into OUT/pairs.jsonl, and its report and reproducibility record
#            into OUT/records/.
# A stage whose runs are finished only scores (nmt compare reuses finished runs and resumes unfinished
# ones), so the same command finishes what an interrupted sitting began; runs do not outlive the
# checkout, so copy OUT's JSON lines into docs/measurements/ before the sitting ends.
#
# It calls python3 (and python3 -m nmt) as found on the PATH: activate the project's environment
# first. Relative paths (MIRROR, ARCHIVE, OUT) are read from the repository root.
#
#   . .venv/bin/activate && CORPUS=europarl SEEDS=1 MIRROR=../shared/data/europarl_comtrans bash scripts/corpus_sitting.sh
#   CORPUS=tatoeba SEEDS=1,2 STAGES="pairs collect" MIRROR=../shared/data/tatoeba bash scripts/corpus_sitting.sh
set -eu
cd "$(dirname "$0")/.."
# this checkout's nmt for every step: python3 scripts/X.py would otherwise import the installed one, which
# an editable install points at another checkout when this one is a worktree (one code version per sitting)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
CORPUS=${CORPUS:-europarl}
SEEDS=${SEEDS:-1}
JOBS=${JOBS:-2}
BASELINES=${BASELINES:-1}
ARCHIVE=${ARCHIVE:-../shared/data/alignments/DeEnGoldAlignment.tar.gz}
OUT=${OUT:-runs/corpus_sitting/$CORPUS}
case $CORPUS in
  europarl) STAGES=${STAGES:-"pairs variants transformer align collect"} ;;
  tatoeba) STAGES=${STAGES:-"pairs collect"} ;;
  *) echo "corpus_sitting.sh: CORPUS is europarl or tatoeba, not $CORPUS" >&2; exit 2 ;;
esac
RUNS=runs/corpora-$CORPUS/$CORPUS-de-en  # a folder of its own per corpus: collect reads one corpus
TRANSFORMERS=runs/corpora-transformer/$CORPUS-de-en  # outside runs/corpora-$CORPUS, which collect reads
DATA=data/$CORPUS/de-en
SHARED=(--split test --beam 5 --set train.threads=1 --jobs "$JOBS" --seeds "$SEEDS")  # every comparison's
COMMON=(--config "configs/${CORPUS}_de_en_bahdanau.yaml" "${SHARED[@]}" --steps 600 --set train.valid_every=200
  --runs-dir "$RUNS")
ALIGNED=bahdanau,luong_general,scaled_dot,qkv,luong_dot,luong_concat,gaussian,luong_location
mkdir -p "$OUT"
if [ ! -f "$DATA/train.de" ]; then
  gold=(); [ "$CORPUS" = europarl ] && gold=(--gold "$ARCHIVE")
  python3 -m nmt data prepare "$CORPUS" --config "configs/${CORPUS}_de_en_bahdanau.yaml" \
    --mirror "${MIRROR:?give MIRROR=DIR, the raw files of the corpus}" "${gold[@]}"
fi

for step in $STAGES; do
  echo "=== $step $(date -u +%T)"
  case $step in
    pairs)
      # its report and record stay in $RUNS/report, where docs_build/pairs_table.py --collect reads them
      python3 -m nmt compare "${COMMON[@]}" --variants bahdanau,none,luong_general,scaled_dot,qkv ;;
    variants)
      python3 -m nmt compare "${COMMON[@]}" --variants luong_dot,luong_concat,gaussian,luong_location --out "$OUT/variants" ;;
    transformer)
      python3 -m nmt compare --config "configs/${CORPUS}_de_en_transformer.yaml" "${SHARED[@]}" \
        --runs-dir "$TRANSFORMERS" --out "$OUT/transformer" ;;
    align)
      runs=()
      for v in ${ALIGNED//,/ }; do for s in ${SEEDS//,/ }; do
        [ -f "$RUNS/${v}_s$s/compare-test/scored.json" ] && runs+=("$RUNS/${v}_s$s")
      done; done
      for s in ${SEEDS//,/ }; do  # each line is a forced pass over the gold set: no per-head lines
        [ -f "$TRANSFORMERS/transformer_s$s/compare-test/scored.json" ] && runs+=("$TRANSFORMERS/transformer_s$s")
      done
      if [ ${#runs[@]} -eq 0 ]; then echo "no finished attention run of seeds $SEEDS in $RUNS or $TRANSFORMERS"; continue; fi
      # written aside and appended once whole: a failure keeps the earlier sittings' lines
      baselines=()  # the diagonal and eflomal depend on the data alone: BASELINES=0 skips them after the first sitting
      [ "$BASELINES" = 1 ] && baselines=(--diagonal --eflomal --eflomal-repeats 3 --train-src "$DATA/train.de"
        --train-tgt "$DATA/train.en")
      python3 scripts/align_rwth.py "${runs[@]}" --archive "$ARCHIVE" --bleu-split test --threads 2 \
        --readings predict,input --merges sum,mean,max --seen-src "$DATA/train.de" --seen-tgt "$DATA/train.en" \
        "${baselines[@]}" > "$OUT/align_rwth.jsonl.part"
      cat "$OUT/align_rwth.jsonl.part" >> "$OUT/align_rwth.jsonl" && rm "$OUT/align_rwth.jsonl.part" ;;
    collect)
      python3 docs_build/pairs_table.py --collect "runs/corpora-$CORPUS" --out "$OUT/pairs.jsonl.part" \
        --note "machine=$(python3 -c 'from nmt.util.runtime import machine; print(machine())')" \
        --note "commit=$(git rev-parse --short HEAD)"
      mv "$OUT/pairs.jsonl.part" "$OUT/pairs.jsonl"
      mkdir -p "$OUT/records"
      for f in report.md record.md record.json; do cp "$RUNS/report/$f" "$OUT/records/$CORPUS-de-en.$f"; done ;;
    *) echo "corpus_sitting.sh: unknown stage $step (pairs, variants, transformer, align or collect)" >&2; exit 2 ;;
  esac
done
echo "=== done $(date -u +%T): $OUT"
