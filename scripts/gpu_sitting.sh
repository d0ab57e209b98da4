#!/usr/bin/env bash
# One GPU sitting of about nine minutes, for a session lent a GPU for a quarter of an hour:
#  1. the GPU recipe for the 43-BLEU target (configs/multi30k_de_en_gpu_reg.yaml), seeds 1 and 2
#     side by side for RECIPE_MIN minutes each, each model chosen on validation and read on
#     test2016 once (train.select in the config, then nmt select --test test2016);
#  2. beside them, the four-pair comparison of the lecture variants: nmt compare on Multi30k
#     de-en, en-de, fr-en and cs-en, VARIANTS x seeds 1,2,3 at 600 updates, each pair JOBS
#     runs at a time; a pair still training at COMPARE_DEADLINE seconds is interrupted (its
#     finished runs keep their files, and the same command continues it);
#  3. alone on the GPU afterwards: beam and greedy decoding speed of the recipe's seed-1 model
#     (scripts/bench_decode.py; with .old/nmt present, the same for that older package first)
#     and a profile of one batch of beam 5 with its done-check interval timed (scripts/profile_decode.py).
# Everything is written under runs/; OUT (default runs/gpu_sitting) receives the JSON lines and
# the logs, and OUT.tgz all of it with the comparison and recipe runs, checkpoints left out.
#
#   MIRROR=../shared/data/multi30k bash scripts/gpu_sitting.sh
#   TINY=1 MIRROR=../shared/data/multi30k bash scripts/gpu_sitting.sh   # the same steps on CPU in a minute
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
MIRROR=${MIRROR:?give MIRROR=DIR, the folder of the raw Multi30k files}
OUT=${OUT:-runs/gpu_sitting}
RECIPE_MIN=${RECIPE_MIN:-5.5}
COMPARE_DEADLINE=${COMPARE_DEADLINE:-470}
JOBS=${JOBS:-3}
VARIANTS=${VARIANTS:-bahdanau,none,luong_general,scaled_dot,qkv}
PAIRS=${PAIRS:-"de-en en-de fr-en cs-en"}
NMT=(python3 -m nmt)
DATA=(--set data.root=data --set "data.mirror=$MIRROR")
RECIPE=(--set train.tensorboard=false --set train.valid_attention_map=false --set train.threads=2)
COMPARE=(--steps 600 --set train.valid_every=200)
BENCH_SECONDS=2
if [ "${TINY:-0}" = 1 ]; then
  DATA=(--set data.root=runs/gpu_sitting_tiny/data --set "data.mirror=$MIRROR")
  SMALL=(--set model.emb_size=16 --set model.hidden_size=16 --set model.enc_layers=1)
  RECIPE+=(--set train.max_steps=10 --set train.valid_every=2 "${SMALL[@]}")
  COMPARE=(--steps 4 --set train.valid_every=2 "${SMALL[@]}")
  BENCH_SECONDS=0
fi
mkdir -p "$OUT"
BASE_PYTHONPATH=${PYTHONPATH:-}
export PYTHONPATH="$PWD:$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}"
since() { echo $(( $(date +%s) - T0 )); }
note() { echo "[$(since) s] $*" | tee -a "$OUT/sitting.log" >&2; }

note "preparing ${PAIRS}"
for pair in $PAIRS; do
  "${NMT[@]}" data prepare multi30k --pair "$pair" --mirror "$MIRROR" --no-progress "${DATA[@]}" \
    >"$OUT/prepare-$pair.log" 2>&1 &
done
wait

note "recipe seeds 1 and 2 (${RECIPE_MIN} min each) and the comparison of ${VARIANTS}"
for seed in 1 2; do
  run=runs/gpu_reg_s$seed
  ( "${NMT[@]}" train --config configs/multi30k_de_en_gpu_reg.yaml --no-progress --set name=gpu_reg_s$seed \
      --set train.seed=$seed --set train.time_budget_min="$RECIPE_MIN" "${DATA[@]}" "${RECIPE[@]}" \
      >"$OUT/train-gpu_reg_s$seed.log" 2>&1 &&
    "${NMT[@]}" select "$run" --last 5 --beam 5 --test test2016 --json \
      >"$OUT/choose-gpu_reg_s$seed.jsonl" 2>"$OUT/choose-gpu_reg_s$seed.log"
    note "recipe seed $seed ended: $(tail -n 1 "$OUT/choose-gpu_reg_s$seed.jsonl" 2>/dev/null)" ) &
done
compares=()
for pair in $PAIRS; do
  src=${pair%-*} tgt=${pair#*-}
  "${NMT[@]}" compare --config "configs/multi30k_${src}_${tgt}_bahdanau.yaml" --variants "$VARIANTS" \
    --seeds 1,2,3 --split test2016 --beam 5 --jobs "$JOBS" --no-progress --runs-dir "runs/pairs/$pair" \
    --set train.threads=1 "${COMPARE[@]}" "${DATA[@]}" >"$OUT/compare-$pair.log" 2>&1 &
  compares+=($!)
done
while [ "$(since)" -lt "$COMPARE_DEADLINE" ] && kill -0 "${compares[@]}" 2>/dev/null; do sleep 5; done
for pid in "${compares[@]}"; do
  kill -0 "$pid" 2>/dev/null && note "interrupting comparison process $pid at the deadline" && kill -INT "$pid"
done
wait
note "training done"

model=runs/gpu_reg_s1/checkpoints/best.pt
if [ -f "$model" ]; then
  if [ -d .old/nmt ]; then  # the search as it was (git archive HEAD nmt | tar -x -C .old), for a before/after
    PYTHONPATH="$PWD/.old:$PWD/scripts:$BASE_PYTHONPATH" python3 scripts/bench_decode.py --checkpoint "$model" \
      --beams 5,1 --batch-sizes 256 --min-seconds "$BENCH_SECONDS" >"$OUT/bench_decode_before.jsonl" 2>"$OUT/bench_decode_before.log"
  fi
  python3 scripts/bench_decode.py --checkpoint "$model" --beams 5,1 --batch-sizes 256 \
    --min-seconds "$BENCH_SECONDS" >"$OUT/bench_decode.jsonl" 2>"$OUT/bench_decode.log"
  python3 scripts/profile_decode.py --checkpoint "$model" --beam 5 --batch-size 256 --check-every 1,2,4,8 \
    --min-seconds "$BENCH_SECONDS" >"$OUT/profile_decode.jsonl" 2>"$OUT/profile_decode.log"
fi
note "done"
tar czf "$OUT.tgz" --exclude='*.pt' --exclude='exports' "$OUT" runs/pairs runs/gpu_reg_s1 runs/gpu_reg_s2 2>/dev/null
cat "$OUT"/choose-*.jsonl "$OUT"/bench_decode*.jsonl "$OUT"/profile_decode.jsonl 2>/dev/null | cut -c1-1500
