#!/bin/bash
# Session 22 on two H100s: the pressure solve over ranks (snowsim bench pressure).
for f in .cl/*.deb; do dpkg -x $f /; done; ldconfig; mkdir -p /etc/OpenCL/vendors
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
R=$OUT/r; mkdir -p $R; nvidia-smi -L > $R/log.txt
timeout 30 .dev/snowsim-o devices --json > $R/devices.json 2>&1
read g1 g2 < <(python3 -c "import json;d=json.load(open('$R/devices.json'));print(*[x['index'] for x in d if 'NVIDIA' in json.dumps(x)][:2])")
for rep in 1 2 3; do for b in o p; do for t in 24; do
  echo "== $b 2^$t rep $rep, two GPUs" >> $R/log.txt
  timeout 240 .dev/snowsim-$b bench pressure --devices $g1,$g2 --tets 2^$t --iterations 400 --json > $R/$b-$t-$rep-2gpu.json 2> $R/$b-$t-$rep-2gpu.err
  python3 -c "
import json;r=json.load(open('$R/$b-$t-$rep-2gpu.json'))
for x in r: print(x['ranks'], x['tetrahedra'], x['owned_max'], x['halo_max'], round(x['ms_per_iteration'],4), '%.2e'%x['relative_residual'])" >> $R/log.txt 2>&1
done; done; done
cd $OUT && tar czf r.tgz r && rm -rf r
