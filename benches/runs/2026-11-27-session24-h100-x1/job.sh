#!/bin/bash
# Session 24 on one H100: the radix sort against the bitonic sort and torch.sort + gather;
# the frame at 2^24 with the radix sort (u) against the session-23 build (t).
for f in .cl/*.deb; do dpkg -x $f /; done; ldconfig; mkdir -p /etc/OpenCL/vendors
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
R=$OUT/r; mkdir -p $R; nvidia-smi -L > $R/log.txt
timeout 30 .dev/snowsim-u devices --json > $R/devices.json 2>&1
read g1 < <(python3 -c "import json;d=json.load(open('$R/devices.json'));print(*[x['index'] for x in d if 'NVIDIA' in json.dumps(x)][:1])")
echo "gpu $g1" >> $R/log.txt
timeout 120 .dev/snowsim-u sort check --device $g1 > $R/check.txt 2>&1; echo "check rc $?" >> $R/log.txt
timeout 200 .dev/snowsim-u sort bench --device $g1 --min-log2 16 --max-log2 26 --iterations 10 --per-kernel --csv $R/sort_h100.csv > $R/sort.txt 2>&1
timeout 120 python3 benches/peers/torch_sort.py --min-log2 16 --max-log2 26 --iterations 10 --csv > $R/torch_sort_h100.csv 2> $R/torch.err
B="--headless --json --render off --wind-every 1 --warmup 100 --frames 800 --particles 16777216 --device $g1 --profile-every 10"
V="--headless --json --render off --wind-every 1 --warmup 100 --frames 2000 --particles 2097152 --device $g1 --profile-every 10"
for rep in 1 2; do
  for b in t u; do
    timeout 60 .dev/snowsim-$b run $B > $R/big-$b-partial-$rep.json 2> $R/big-$b-partial-$rep.err
    timeout 60 .dev/snowsim-$b run $B --sort full > $R/big-$b-full-$rep.json 2> $R/big-$b-full-$rep.err
  done
  timeout 60 .dev/snowsim-u run $V > $R/v-u-partial-$rep.json 2> /dev/null
  timeout 60 .dev/snowsim-u run $V --sort full > $R/v-u-full-$rep.json 2> /dev/null
done
for f in $R/big-*.json $R/v-*.json; do python3 -c "
import json,sys;r=json.load(open('$f'));s={x['stage']:round(x['busy_ms'],3) for x in r.get('stages',[])}
print('$(basename $f)', round(r['fps'],1), {k:v for k,v in s.items() if k.startswith('sort') or k.startswith('snow.step')})" >> $R/log.txt 2>&1; done
cd $OUT && tar czf r.tgz r && rm -rf r
