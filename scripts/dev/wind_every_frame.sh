#!/usr/bin/env bash
# The issue-14 performance runs on a GPU: the valley at 2^21 particles with a wind step every
# frame, undrawn and drawn (1280x720, splat), the wind alone, the scene's own cadence, and the
# wind step per operator form; each timed on every frame and on one frame in 16
# (--profile-every), then `snowsim bench reduce`. Usage:
#   scripts/dev/wind_every_frame.sh [SNOWSIM] [DEVICE] [OUT_DIR]
# Prints one line per run (rate, device ms per frame, CG iterations per step, wind stages)
# and leaves each run's --json report in OUT_DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
S=${1:-target/release/snowsim}
DEVICE=${2:-h100}
OUT=${3:-target/wind-every-frame}
mkdir -p "$OUT"
sed 's/^\[wind\]/[wind]\noperator = "tetrahedra"/' scenes/valley.toml \
    | sed "s#heightmap = \"valley.png\"#heightmap = \"$PWD/scenes/valley.png\"#" > "$OUT/valley_tets.toml"
summary() {
    python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
snow = r.get("snow") or {}
steps = snow.get("wind_steps") or 0
it = snow.get("wind_iterations") or 0  # already per step
wind = [(s["stage"], round(s["busy_ms"], 3)) for s in r["stages"] if s["stage"].startswith("wind.")]
print(f"  {r['fps']:.1f}/s  frame {r['frame_ms']:.3f} ms  device {r['kernel_device_ms']:.3f} ms"
      f"  {it:.2f} CG it/step  {wind}")
PY
}
run() {
    local name=$1
    shift
    echo "--- $name: $*"
    if timeout 300 "$S" run --device "$DEVICE" --headless --json "$@" > "$OUT/$name.json" 2> "$OUT/$name.log"; then
        summary "$OUT/$name.json"
    else
        tail -3 "$OUT/$name.log"
    fi
}
common=(--particles 2097152 --wind-every 1 --frames 1000 --warmup 50)
for every in 1 16; do
    run "undrawn_p$every" --render off "${common[@]}" --profile-every $every
    run "drawn_p$every" --particle-render splat --size 1280x720 "${common[@]}" --profile-every $every
    run "wind_alone_p$every" --render off --simulate wind --wind-every 1 --frames 1000 --warmup 50 --profile-every $every
done
run undrawn_tets --scene "$OUT/valley_tets.toml" --render off "${common[@]}" --profile-every 16
run scene_cadence --render off --particles 2097152 --frames 2000 --warmup 50 --profile-every 16
"$S" bench wind --device "$DEVICE" --tets scene --steps 300
"$S" bench wind --device "$DEVICE" --tets scene --steps 300 --scene "$OUT/valley_tets.toml"
"$S" bench reduce --device "$DEVICE" --launches 20
