#!/bin/bash
# Session 21: P = HEAD + GL timer; E = one semaphore pair + scene before the wait; L = E + late
# acquires + depth kernel per vertex. Drawn valley, same job.
for f in .cl/*.deb .gl/*.deb; do dpkg -x $f /; done; ldconfig; mkdir -p /etc/OpenCL/vendors
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/share/glvnd/egl_vendor.d/10_nvidia.json VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
R=$OUT/r; mkdir -p $R; nvidia-smi -L > $R/log.txt
timeout 30 .dev/snowsim devices --json > $R/devices.json 2>&1
read g1 g2 < <(python3 -c "import json;d=json.load(open('$R/devices.json'));print(*[x['index'] for x in d if 'NVIDIA' in json.dumps(x)][:2])")
run() { local name=$1; local bin=$2; shift 2; timeout 120 $bin run --headless --json --device $g1 "$@" > $R/$name.json 2> $R/$name.err; echo "$name rc=$? $(python3 -c "
import json;d=json.load(open('$R/$name.json'));print(round(d['fps'],1), d.get('particle_render'), ' '.join(f\"{s['stage']}={s['busy_ms']:.3f}\" for s in d['stages'] if not s['device'] or s['stage']=='snow.depth'), 'kdev', round(d['kernel_device_ms'],3))" 2>&1)" >> $R/log.txt; }
A="--wind-every 1 --warmup 100 --frames 1500"
run warm .dev/snowsim --wind-every 1 --frames 200 --render off
for rep in 1 2 3; do for b in L E P; do bin=.dev/snowsim; [ $b = P ] && bin=.dev/snowsim-prev; [ $b = E ] && bin=.dev/snowsim-early
run d720-$b-$rep $bin $A --particles 2097152 --size 1280x720
[ $rep = 1 ] && run d1080-$b-$rep $bin $A --particles 2097152 --size 1920x1080
[ $rep = 1 ] && run sprites-$b-$rep $bin $A --particles 65536 --size 1280x720 --particle-render sprites
done; done
for b in L P; do bin=.dev/snowsim; [ $b = P ] && bin=.dev/snowsim-prev
run shot-$b $bin --frames 300 --particles 2097152 --size 1280x720 --screenshot $R/shot-$b.png
run shotsp-$b $bin --frames 300 --particles 65536 --size 1280x720 --particle-render sprites --screenshot $R/shotsp-$b.png
run shotv-$b $bin --frames 300 --particles 2097152 --size 1280x720 --wind --pressure --friction --screenshot $R/shotv-$b.png
done
cp $R/shot-L.png $R/shot-P.png $OUT/ 2>/dev/null
python3 - >> $R/log.txt 2>&1 <<'PY'
from PIL import Image
import numpy as np, os
R=os.environ['OUT']+'/r'
for a,b in [('shot-L','shot-P'),('shotsp-L','shotsp-P'),('shotv-L','shotv-P')]:
    x=np.asarray(Image.open(f'{R}/{a}.png')).astype(int); y=np.asarray(Image.open(f'{R}/{b}.png')).astype(int)
    d=abs(x-y); print(a,b,'max diff',d.max(),'pixels differing',(d.max(axis=2)>0).sum())
PY
cd $OUT && tar czf r.tgz r && rm -rf r
