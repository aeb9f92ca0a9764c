#!/usr/bin/env bash
# Screenshots of the valley drawn with splatting and with sprites, for comparing the two by eye
# (the splat's coverage counters should make the far snowfall as dense as the sprites show it).
#
#   scripts/dev/splat_shots.sh [OUT_DIR] [extra `snowsim run` arguments...]
#
# Defaults: 2^21 particles, 960x540, headless, --interop auto (external memory on the H100, copy
# on PoCL), 120 frames, the scene's seed; writes OUT_DIR/{splat,sprites,splat-copy}.png and
# .json summaries (OUT_DIR defaults to target/splat-shots). Env: SNOWSIM (binary, default
# target/release/snowsim, built if missing), PARTICLES, SIZE, FRAMES, DEVICE.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-target/splat-shots}
shift || true
bin=${SNOWSIM:-target/release/snowsim}
[ -x "$bin" ] || cargo build --release --locked
mkdir -p "$out"
common=(run --scene scenes/valley.toml --headless --size "${SIZE:-960x540}"
        --particles "${PARTICLES:-2097152}" --frames "${FRAMES:-120}" --json)
[ -n "${DEVICE:-}" ] && common+=(--device "$DEVICE")
shoot() { # name interop render [extra args]
    local name=$1 interop=$2 render=$3
    shift 3
    echo "== $name: --interop $interop --particle-render $render" >&2
    "$bin" "${common[@]}" --interop "$interop" --particle-render "$render" \
        --screenshot "$out/$name.png" "$@" >"$out/$name.json"
    grep -o '"\(interop\|particle_render\|fps[a-z_]*\)": *[^,]*' "$out/$name.json" \
        | tr '\n' ' ' >&2
    echo >&2
}
shoot splat auto splat "$@"
shoot sprites auto sprites "$@"
shoot splat-copy copy splat "$@"
if command -v python3 >/dev/null && python3 -c 'import PIL' 2>/dev/null; then
    python3 - "$out" <<'PY'
import json, sys
from PIL import Image, ImageChops, ImageStat
d = sys.argv[1]
imgs = {n: Image.open(f"{d}/{n}.png").convert("RGB") for n in ("splat", "sprites", "splat-copy")}
for n, im in imgs.items():
    j = json.load(open(f"{d}/{n}.json"))
    ms = {s["stage"]: round(s["busy_ms"], 3) for s in j.get("stages", [])
          if s["stage"] in ("splat", "render.draw", "render.composite")}
    print(f"{n:11s} mean RGB {[round(v, 1) for v in ImageStat.Stat(im).mean]} "
          f"fps {j.get('fps', 0):.1f} ms/frame {ms}")
for a, b in (("splat", "sprites"), ("splat", "splat-copy")):
    diff = ImageStat.Stat(ImageChops.difference(imgs[a], imgs[b])).mean
    print(f"|{a} - {b}| mean per channel {[round(v, 2) for v in diff]}")
PY
fi
echo "screenshots in $out" >&2
