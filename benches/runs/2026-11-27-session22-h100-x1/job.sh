#!/bin/bash
# Next session: branch flutter-derived (B: flutter derived, no drawn write when undrawn) against
# main (M), one H100, same job. Build both here first:
#   git checkout flutter-derived && cargo build --release && cp target/release/snowsim .dev/snowsim-b
#   git checkout main && cargo build --release && cp target/release/snowsim .dev/snowsim
for f in .cl/*.deb .gl/*.deb; do dpkg -x $f /; done; ldconfig; mkdir -p /etc/OpenCL/vendors
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/share/glvnd/egl_vendor.d/10_nvidia.json VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
R=$OUT/r; mkdir -p $R; nvidia-smi -L > $R/log.txt
timeout 30 .dev/snowsim devices --json > $R/devices.json 2>&1
read g1 g2 < <(python3 -c "import json;d=json.load(open('$R/devices.json'));print(*[x['index'] for x in d if 'NVIDIA' in json.dumps(x)][:2])")
run() { local name=$1; local bin=$2; shift 2; timeout 120 $bin run --json --device $g1 "$@" > $R/$name.json 2> $R/$name.err; echo "$name rc=$? $(python3 -c "
import json;d=json.load(open('$R/$name.json'));print(round(d['fps'],1), 'kdev', round(d['kernel_device_ms'],3), ' '.join(f\"{s['stage']}={s['busy_ms']:.3f}\" for s in d['stages'] if s['device'] and s['stage'].startswith(('snow.step','sort.'))))" 2>&1)" >> $R/log.txt; }
for rep in 1 2; do for b in C B M; do bin=.dev/snowsim; [ $b = B ] && bin=.dev/snowsim-b; [ $b = C ] && bin=.dev/snowsim-c
run big-$b-$rep $bin --render off --headless --wind-every 1 --warmup 100 --frames 800 --particles 16777216
run v-$b-$rep $bin --render off --headless --wind-every 1 --warmup 100 --frames 2000 --particles 2097152
run d720-$b-$rep $bin --headless --wind-every 1 --warmup 100 --frames 1500 --particles 2097152 --size 1280x720
done; done
for b in C B M; do bin=.dev/snowsim; [ $b = B ] && bin=.dev/snowsim-b; [ $b = C ] && bin=.dev/snowsim-c
timeout 120 $bin run --render off --headless --device $g1 --frames 500 --particles 65536 --vtu $R/s-$b.vtu --force > /dev/null 2>&1
done
cmp $R/s-C.vtu $R/s-M.vtu >> $R/log.txt 2>&1 && echo "wind identical" >> $R/log.txt
cmp $R/s-C.cover.vtu $R/s-M.cover.vtu >> $R/log.txt 2>&1 && echo "cover identical" >> $R/log.txt
rm -f $R/*.vtu
cd $OUT && tar czf r.tgz r && rm -rf r
