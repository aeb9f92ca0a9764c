#!/bin/bash
# Session 21: the final build (D) against HEAD + GL timer (P) on one H100, drawn valley.
for f in .cl/*.deb .gl/*.deb; do dpkg -x $f /; done; ldconfig; mkdir -p /etc/OpenCL/vendors
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/share/glvnd/egl_vendor.d/10_nvidia.json VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
R=$OUT/r; mkdir -p $R; nvidia-smi -L > $R/log.txt
timeout 30 .dev/snowsim devices --json > $R/devices.json 2>&1
read g1 g2 < <(python3 -c "import json;d=json.load(open('$R/devices.json'));print(*[x['index'] for x in d if 'NVIDIA' in json.dumps(x)][:2])")
run() { local name=$1; local bin=$2; shift 2; timeout 60 $bin run --headless --json --device $g1 "$@" > $R/$name.json 2> $R/$name.err; echo "$name rc=$? $(python3 -c "
import json;d=json.load(open('$R/$name.json'));print(round(d['fps'],1), d.get('particle_render'), 'kdev', round(d['kernel_device_ms'],3))" 2>&1)" >> $R/log.txt; }
A="--wind-every 1 --warmup 100 --frames 1500 --particles 2097152 --size 1280x720"
for rep in 1 2 3; do run d720-D-$rep .dev/snowsim $A; [ $rep != 3 ] && run d720-P-$rep .dev/snowsim-prev $A; done
cd $OUT && tar czf r.tgz r && rm -rf r
