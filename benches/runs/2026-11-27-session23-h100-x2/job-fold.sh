#!/bin/bash
# Session 23 on two H100s: the pressure solve's group sums folded on the device (t) against
# the halo without blocking alone (s), 2^24.
for f in .cl/*.deb; do dpkg -x $f /; done; ldconfig; mkdir -p /etc/OpenCL/vendors
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
R=$OUT/r; mkdir -p $R; nvidia-smi -L > $R/log.txt
timeout 30 .dev/snowsim-t devices --json > $R/devices.json 2>&1
read g1 g2 < <(python3 -c "import json;d=json.load(open('$R/devices.json'));print(*[x['index'] for x in d if 'NVIDIA' in json.dumps(x)][:2])")
p() { local b=$1 t=$2 rep=$3; timeout 100 .dev/snowsim-$b bench pressure --devices $g1,$g2 --tets 2^$t --iterations 400 --json > $R/p-$b-$t-$rep.json 2> $R/p-$b-$t-$rep.err
  python3 -c "
import json;r=json.load(open('$R/p-$b-$t-$rep.json'))
for x in r: print('$b 2^$t rep $rep', x['ranks'], x['tetrahedra'], x['owned_max'], x['halo_max'], round(x['ms_per_iteration'],4), '%.2e'%x['relative_residual'])" >> $R/log.txt 2>&1; }
p t 24 1; p s 24 1
cd $OUT && tar czf r.tgz r && rm -rf r
