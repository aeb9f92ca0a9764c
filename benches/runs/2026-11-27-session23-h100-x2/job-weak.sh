#!/bin/bash
# Session 23 on two H100s: the pressure solve's weak scaling (2^23 tetrahedra on one rank,
# 2^24 on two) beside its strong scaling (2^24 on one and two).
for f in .cl/*.deb; do dpkg -x $f /; done; ldconfig; mkdir -p /etc/OpenCL/vendors
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
R=$OUT/r; mkdir -p $R; nvidia-smi -L > $R/log.txt
timeout 30 .dev/snowsim-r devices --json > $R/devices.json 2>&1
read g1 g2 < <(python3 -c "import json;d=json.load(open('$R/devices.json'));print(*[x['index'] for x in d if 'NVIDIA' in json.dumps(x)][:2])")
for rep in 1 2 3; do for t in 23 24; do
  timeout 200 .dev/snowsim-r bench pressure --devices $g1,$g2 --tets 2^$t --iterations 400 --json > $R/p-$t-$rep.json 2> $R/p-$t-$rep.err
  python3 -c "
import json;r=json.load(open('$R/p-$t-$rep.json'))
for x in r: print('2^$t rep $rep', x['ranks'], x['tetrahedra'], x['vertices'], x['owned_max'], x['halo_max'], round(x['ms_per_iteration'],4), '%.2e'%x['relative_residual'])" >> $R/log.txt 2>&1
done; done
cd $OUT && tar czf r.tgz r && rm -rf r
