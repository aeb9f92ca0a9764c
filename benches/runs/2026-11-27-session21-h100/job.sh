#!/bin/bash
# Session 21: D = E + the depth kernel per vertex (acquires at the frame's start), against L and E.
for f in .cl/*.deb .gl/*.deb; do dpkg -x $f /; done; ldconfig; mkdir -p /etc/OpenCL/vendors
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/share/glvnd/egl_vendor.d/10_nvidia.json VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
R=$OUT/r; mkdir -p $R; nvidia-smi -L > $R/log.txt
timeout 30 .dev/snowsim devices --json > $R/devices.json 2>&1
read g1 g2 < <(python3 -c "import json;d=json.load(open('$R/devices.json'));print(*[x['index'] for x in d if 'NVIDIA' in json.dumps(x)][:2])")
echo "g1=$g1 g2=$g2" >> $R/log.txt
run() { local name=$1; local bin=$2; shift 2; timeout 100 $bin run --headless --json --device $g1 "$@" > $R/$name.json 2> $R/$name.err; echo "$name rc=$? $(python3 -c "
import json;d=json.load(open('$R/$name.json'));print(round(d['fps'],1), d.get('particle_render'), ' '.join(f\"{s['stage']}={s['busy_ms']:.3f}\" for s in d['stages'] if not s['device']), 'kdev', round(d['kernel_device_ms'],3))" 2>&1)" >> $R/log.txt; }
A="--wind-every 1 --warmup 100 --frames 1500 --particles 2097152"
for rep in 1 2; do for b in D E; do bin=.dev/snowsim; [ $b = E ] && bin=.dev/snowsim-early
run one720-$b-$rep $bin $A --size 1280x720
run one1080-$b-$rep $bin $A --size 1920x1080
run beside720-$b-$rep $bin $A --size 1280x720 --wind-device $g2
done; done
run shot-D .dev/snowsim --frames 300 --particles 2097152 --size 1280x720 --screenshot $R/shot-D.png
run shot-P .dev/snowsim-prev --frames 300 --particles 2097152 --size 1280x720 --screenshot $R/shot-P.png
cmp $R/shot-D.png $R/shot-P.png >> $R/log.txt 2>&1 && echo "shots identical bytes" >> $R/log.txt
cd $OUT && tar czf r.tgz r && rm -rf r
