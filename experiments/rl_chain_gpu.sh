#!/usr/bin/env bash
# An rl_chain.py preset at GPU size on one machine: every seed's SFT + RL run side by side on the one GPU, then every
# seed's held-out rows (validation, greedy, in one lockstep batch), then the chain's report. Each phase has a wall-clock
# limit, so a lease that ends still leaves what finished (a seed whose RL stage did not finish keeps its SFT row).
#
#   experiments/rl_chain_gpu.sh PRESET OUTPUT_DIR TRAIN_LIMIT_S EVAL_LIMIT_S SEED...
#   experiments/rl_chain_gpu.sh inbox-grpo-gpu runs/chain-inbox-grpo-gpu 360 150 0 1 2
#
# PYTHON names the interpreter (default python3), EVAL_BATCH the held-out episodes per lockstep batch (default 128).
# The report goes to OUTPUT_DIR/report.txt. SFT_FROM=DIR starts every seed from DIR's finished SFT stage (rl_chain.py
# --sft-from: the stage is copied and skipped; DIR holds its teacher-train.json). EVAL_LIMIT_S 0 trains only: the
# held-out rows are then played elsewhere (e.g. on the CPU at the precision of rows already there).
set -u
if [ $# -lt 5 ]; then
    echo "usage: $0 PRESET OUTPUT_DIR TRAIN_LIMIT_S EVAL_LIMIT_S SEED..." >&2
    exit 2
fi
preset=$1 out=$2 train_limit=$3 eval_limit=$4
shift 4
for limit in "$train_limit" "$eval_limit"; do
    case "$limit" in
        '' | *[!0-9]*) echo "$0: TRAIN_LIMIT_S and EVAL_LIMIT_S are whole seconds, got '$train_limit' and '$eval_limit'" >&2
                       exit 2 ;;
    esac
done
train_limit=$((10#$train_limit)) eval_limit=$((10#$eval_limit))  # "00" is 0, "090" is 90 (not octal)
py=${PYTHON:-python3}
chain="experiments/rl_chain.py"
mkdir -p "$out"

# run every command of a phase in the background, each logging to its own file; stop what still runs at the limit
# (the chain's drill.cli children too: they are in the phase's process groups)
phase() {
    local limit=$1 name=$2
    shift 2
    local pids=() seed
    for seed in "${SEEDS[@]}"; do
        setsid "$@" --seeds "$seed" > "$out/$name-$seed.log" 2>&1 &
        pids+=($!)
    done
    local deadline=$((SECONDS + limit))
    while [ $SECONDS -lt $deadline ]; do
        local running=0 pid
        for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && running=1; done
        [ $running = 0 ] && break
        sleep 2
    done
    local stopped=0
    for pid in "${pids[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            echo "$name: stopped at the ${limit}s limit (process group $pid)"
            kill -TERM -- "-$pid" 2>/dev/null
            stopped=1
        fi
    done
    if [ $stopped = 1 ]; then
        sleep 3
        for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null; done
    fi
    echo "$name: done after $((SECONDS - deadline + limit)) s"
}

SEEDS=("$@")
started=$SECONDS
"$py" "$chain" "$preset" --teacher-only --output-dir "${SFT_FROM:-$out}" || exit 1
sft_from=()
[ -n "${SFT_FROM:-}" ] && sft_from=(--sft-from "$SFT_FROM")
phase "$train_limit" train "$py" "$chain" "$preset" --untrained-seed -1 --eval-tasks 0 --output-dir "$out" \
    ${sft_from[@]+"${sft_from[@]}"}  # bash before 4.4 calls an empty array unbound under set -u
if [ "$eval_limit" = 0 ]; then
    echo "chain: $(( (SECONDS - started) )) s; trained only (EVAL_LIMIT_S 0)"
    exit 0
fi
export DRILL_PREFIX_CACHE_MB=${DRILL_PREFIX_CACHE_MB:-8192}
phase "$eval_limit" eval "$py" "$chain" "$preset" --evaluate-only --eval-batch "${EVAL_BATCH:-128}" \
    --untrained-seed -1 --output-dir "$out"
"$py" "$chain" "$preset" --seeds "${SEEDS[@]}" --output-dir "$out" --report-only --episodes 2 > "$out/report.txt" 2>&1
echo "chain: $(( (SECONDS - started) )) s; report in $out/report.txt"
