#!/bin/bash
# Session 22 on two H100s: the split's calibration writing the drawn copy as the run does (D)
# against the build before (C), 2^24 undrawn, auto shares; one GPU beside.
for f in .cl/*.deb .gl/*.deb; do dpkg -x $f /; done; ldconfig; mkdir -p /etc/OpenCL/vendors
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/share/glvnd/egl_vendor.d/10_nvidia.json VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
R=$OUT/r; mkdir -p $R; nvidia-smi -L > $R/log.txt
timeout 30 .dev/snowsim-d devices --json > $R/devices.json 2>&1
read g1 g2 < <(python3 -c "import json;d=json.load(open('$R/devices.json'));print(*[x['index'] for x in d if 'NVIDIA' in json.dumps(x)][:2])")
run() { local name=$1; local bin=$2; shift 2; timeout 100 $bin run --headless --json --device $g1 "$@" > $R/$name.json 2> $R/$name.err; echo "$name rc=$? $(python3 -c "
import json;d=json.load(open('$R/$name.json'));print(round(d['fps'],1), 'kdev', round(d['kernel_device_ms'],3), [round(s['fraction'],3) for s in (d.get('snow_devices') or [])])" 2>&1)" >> $R/log.txt; }
B="--render off --wind-every 1 --warmup 100 --frames 800 --particles 16777216"
for rep in 1 2 3; do for b in D C; do bin=.dev/snowsim-$(echo $b | tr DC dc)
run split-$b-$rep $bin $B --snow-devices $g1,$g2 --wind-device $g2
done; done
run one-D .dev/snowsim-d $B
run split-D-0.6 .dev/snowsim-d $B --snow-devices $g1,$g2 --wind-device $g2 --snow-shares 0.6,0.4
grep -h "snow share" $R/split-D-1.err $R/split-C-1.err >> $R/log.txt
cd $OUT && tar czf r.tgz r && rm -rf r
