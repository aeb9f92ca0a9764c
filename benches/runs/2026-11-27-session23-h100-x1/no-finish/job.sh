#!/bin/bash
# Session 23 on one H100: what the drawn frame would gain without its clFinish (x, an
# experiment that draws the last frame's overflow count) against the build (r).
for f in .cl/*.deb .gl/*.deb; do dpkg -x $f /; done; ldconfig; mkdir -p /etc/OpenCL/vendors
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/share/glvnd/egl_vendor.d/10_nvidia.json VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
R=$OUT/r; mkdir -p $R; nvidia-smi -L > $R/log.txt
timeout 30 .dev/snowsim-r devices --json > $R/devices.json 2>&1
g1=$(python3 -c "import json;d=json.load(open('$R/devices.json'));print([x['index'] for x in d if 'NVIDIA' in json.dumps(x)][0])")
run() { local name=$1; local bin=$2; shift 2; timeout 100 $bin run --headless --json --device $g1 "$@" > $R/$name.json 2> $R/$name.err; echo "$name rc=$? $(python3 -c "
import json;d=json.load(open('$R/$name.json'));print(round(d['fps'],1), 'kdev', round(d['kernel_device_ms'],3), d.get('interop'), d.get('particle_render'))" 2>&1)" >> $R/log.txt; }
for rep in 1 2; do
run d720-r-$rep .dev/snowsim-r --wind-every 1 --warmup 100 --frames 1500 --particles 2097152 --size 1280x720
EXP_NOFINISH=1 run d720-x-$rep .dev/snowsim-x --wind-every 1 --warmup 100 --frames 1500 --particles 2097152 --size 1280x720
run d720w4-r-$rep .dev/snowsim-r --wind-every 4 --warmup 100 --frames 1500 --particles 2097152 --size 1280x720
EXP_NOFINISH=1 run d720w4-x-$rep .dev/snowsim-x --wind-every 4 --warmup 100 --frames 1500 --particles 2097152 --size 1280x720
done
tail -3 $R/d720-x-1.err >> $R/log.txt
cd $OUT && tar czf r.tgz r && rm -rf r
