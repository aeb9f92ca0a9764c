#!/bin/bash
# Session 24 on one H100: the advection loading the inflow, projector and flags after the walk
# (y) against before it (w); registers and bench wind at 2^22.
for f in .cl/*.deb; do dpkg -x $f /; done; ldconfig; mkdir -p /etc/OpenCL/vendors
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
R=$OUT/r; mkdir -p $R; nvidia-smi -L > $R/log.txt
timeout 30 .dev/snowsim-y devices --json > $R/devices.json 2>&1
read g1 < <(python3 -c "import json;d=json.load(open('$R/devices.json'));print(*[x['index'] for x in d if 'NVIDIA' in json.dumps(x)][:1])")
for b in y w; do
  SNOWSIM_KERNEL_OPTIONS=-cl-nv-verbose SNOWSIM_KERNEL_LOG=1 timeout 100 .dev/snowsim-$b bench wind --device $g1 --tets 2^16 --steps 3 > /dev/null 2> $R/regs-$b.txt
  grep -B1 -A3 "wind_advect" $R/regs-$b.txt | grep -i "regist\|wind_advect" | head -6 >> $R/log.txt
done
for rep in 1 2 3; do for b in y w; do
  timeout 120 .dev/snowsim-$b bench wind --device $g1 --tets 2^22 --json > $R/wind-$b-$rep.json 2> /dev/null
  python3 -c "
import json;r=json.load(open('$R/wind-$b-$rep.json'))[0]
print('$b rep $rep', round(r['median_step_ms'],3), r['iterations'], [(s['stage'], round(s['ms'],4), round(s['fraction_of_copy'],3)) for s in r['stages'] if s['stage'] in ('wind.advect',)])" >> $R/log.txt 2>&1
done; done
V="--headless --json --render off --wind-every 1 --warmup 100 --frames 2000 --particles 2097152 --device $g1"
for rep in 1 2; do for b in y w; do
  timeout 60 .dev/snowsim-$b run $V > $R/v-$b-$rep.json 2> /dev/null
  python3 -c "import json;r=json.load(open('$R/v-$b-$rep.json'));print('valley $b $rep', round(r['fps'],1))" >> $R/log.txt 2>&1
done; done
cd $OUT && tar czf r.tgz r && rm -rf r
