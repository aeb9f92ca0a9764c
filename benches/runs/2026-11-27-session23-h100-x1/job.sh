#!/bin/bash
# Session 23 on one H100: advection walks from the hint (n), plus the start's velocities
# loaded beside its coordinates (p), against the build before (o); registers per kernel.
for f in .cl/*.deb .gl/*.deb; do dpkg -x $f /; done; ldconfig; mkdir -p /etc/OpenCL/vendors
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/share/glvnd/egl_vendor.d/10_nvidia.json VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
R=$OUT/r; mkdir -p $R; nvidia-smi -L > $R/log.txt
timeout 30 .dev/snowsim-r devices --json > $R/devices.json 2>&1
g1=$(python3 -c "import json;d=json.load(open('$R/devices.json'));print([x['index'] for x in d if 'NVIDIA' in json.dumps(x)][0])")
for b in o q r; do
  SNOWSIM_KERNEL_OPTIONS=-cl-nv-verbose SNOWSIM_KERNEL_LOG=1 timeout 60 .dev/snowsim-$b wind --device $g1 --steps 5 > /dev/null 2> $R/verbose-$b.txt
  grep -A3 "wind_advect" $R/verbose-$b.txt | grep -i "reg\|wind_advect" | head -6 >> $R/log.txt
done
for rep in 1 2; do for b in o q r; do
  timeout 150 .dev/snowsim-$b bench wind --device $g1 --tets 2^22 --json > $R/wind-$b-$rep.json 2> $R/wind-$b-$rep.err
  python3 -c "
import json;r=json.load(open('$R/wind-$b-$rep.json'))[0]
print('$b', $rep, r['median_step_ms'], r['iterations'], [(s['stage'], round(s['ms'],4)) for s in r['stages']])" >> $R/log.txt 2>&1
done; done
run() { local name=$1; local bin=$2; shift 2; timeout 100 $bin run --headless --json --device $g1 "$@" > $R/$name.json 2> $R/$name.err; echo "$name rc=$? $(python3 -c "
import json;d=json.load(open('$R/$name.json'));print(round(d['fps'],1), 'kdev', round(d['kernel_device_ms'],3))" 2>&1)" >> $R/log.txt; }
for rep in 1 2; do for b in o q r; do
[ $b = q ] || run f21-$b-$rep .dev/snowsim-$b --render off --wind-every 1 --warmup 100 --frames 2000
done; done
for b in o r; do
run f24-$b .dev/snowsim-$b --render off --wind-every 1 --warmup 100 --frames 800 --particles 16777216
timeout 150 .dev/snowsim-$b bench wind --device $g1 --tets scene --json > $R/valley-$b.json 2> $R/valley-$b.err
python3 -c "
import json;r=json.load(open('$R/valley-$b.json'))[0]
print('valley $b', r['median_step_ms'], r['iterations'], [(s['stage'], round(s['ms'],4), round(s['fraction_of_copy'],3)) for s in r['stages']])" >> $R/log.txt 2>&1
done
cd $OUT && tar czf r.tgz r && rm -rf r
