#!/bin/bash
# Session 24 on one H100: sorting one frame in K (--sort-every), partial and full; the radix
# sort with the chunk offsets added in the scatter.
for f in .cl/*.deb; do dpkg -x $f /; done; ldconfig; mkdir -p /etc/OpenCL/vendors
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
R=$OUT/r; mkdir -p $R; nvidia-smi -L > $R/log.txt
timeout 30 .dev/snowsim-v devices --json > $R/devices.json 2>&1
read g1 < <(python3 -c "import json;d=json.load(open('$R/devices.json'));print(*[x['index'] for x in d if 'NVIDIA' in json.dumps(x)][:1])")
timeout 120 .dev/snowsim-v sort bench --device $g1 --min-log2 16 --max-log2 24 --iterations 10 --per-kernel --csv $R/sort_h100.csv > $R/sort.txt 2>&1
B="--headless --json --render off --wind-every 1 --warmup 100 --frames 800 --particles 16777216 --device $g1 --profile-every 10"
V="--headless --json --render off --wind-every 1 --warmup 100 --frames 2000 --particles 2097152 --device $g1 --profile-every 10"
for rep in 1 2; do
  timeout 60 .dev/snowsim-t run $B > $R/big-t-partial-1-$rep.json 2> /dev/null
  for k in 1 2 4 8; do timeout 60 .dev/snowsim-v run $B --sort-every $k > $R/big-v-partial-$k-$rep.json 2> /dev/null; done
  for k in 2 4 8; do timeout 60 .dev/snowsim-v run $B --sort full --sort-every $k > $R/big-v-full-$k-$rep.json 2> /dev/null; done
  timeout 60 .dev/snowsim-t run $V > $R/v-t-partial-1-$rep.json 2> /dev/null
  for k in 1 2 4; do timeout 60 .dev/snowsim-v run $V --sort-every $k > $R/v-v-partial-$k-$rep.json 2> /dev/null; done
  for k in 4 8; do timeout 60 .dev/snowsim-v run $V --sort full --sort-every $k > $R/v-v-full-$k-$rep.json 2> /dev/null; done
done
for f in $R/big-*.json $R/v-*.json; do python3 -c "
import json,sys;r=json.load(open('$f'));s={x['stage']:round(x['busy_ms'],3) for x in r.get('stages',[])}
print('$(basename $f)', round(r['fps'],1), {k:v for k,v in s.items() if k.startswith('sort') or k.startswith('snow.')})" >> $R/log.txt 2>&1; done
cd $OUT && tar czf r.tgz r && rm -rf r
