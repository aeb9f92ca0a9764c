#!/bin/bash
# Session 24 on two H100s: the wind beside reads its field before the step's check (b2)
# against after it (y), not drawn and drawn at 2^21, the 2^24 split.
for f in .cl/*.deb .gl/*.deb; do dpkg -x $f /; done; ldconfig; mkdir -p /etc/OpenCL/vendors
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/share/glvnd/egl_vendor.d/10_nvidia.json VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
R=$OUT/r; mkdir -p $R; nvidia-smi -L > $R/log.txt
timeout 30 .dev/snowsim-y devices --json > $R/devices.json 2>&1
read g1 g2 < <(python3 -c "import json;d=json.load(open('$R/devices.json'));print(*[x['index'] for x in d if 'NVIDIA' in json.dumps(x)][:2])")
echo "g1=$g1 g2=$g2" >> $R/log.txt
run() { local name=$1; local bin=$2; shift 2; timeout 100 $bin run --headless --json --device $g1 "$@" > $R/$name.json 2> $R/$name.err; echo "$name rc=$? $(python3 -c "
import json;d=json.load(open('$R/$name.json'));print(round(d['fps'],1), 'kdev', round(d['kernel_device_ms'],3), d.get('snow_shares', ''))" 2>&1)" >> $R/log.txt; }
V="--wind-every 1 --warmup 100 --frames 2000 --particles 2097152"
D="--wind-every 1 --warmup 100 --frames 1500 --particles 2097152 --size 1280x720"
B="--render off --wind-every 1 --warmup 100 --frames 800 --particles 16777216"
run warm .dev/snowsim-y --wind-every 1 --frames 200 --render off
for rep in 1 2 3; do
for b in b2 y; do bin=.dev/snowsim-$b
run v-one-$b-$rep $bin $V --render off
run v-beside-$b-$rep $bin $V --render off --wind-device $g2
done; done
for rep in 1 2; do
for b in b2 y; do bin=.dev/snowsim-$b
run d-one-$b-$rep $bin $D
run d-beside-$b-$rep $bin $D --wind-device $g2
run big-split-$b-$rep $bin $B --snow-devices $g1,$g2 --wind-device $g2
done; done
cd $OUT && tar czf r.tgz r && rm -rf r
