#!/bin/bash
cd "$(dirname "$0")/../.."
root=$PWD
for round in 1 2; do
  for tree in before after; do
    cd $root/.gpu/trees/$tree
    export PYTHONPATH=$PWD:/tmp/site
    echo "=== round $round tree $tree" >> $OUT/inplace.log
    timeout 150 python3 $root/.gpu/h200/inplace.py >> $OUT/inplace.log 2>&1
    echo "=== round $round tree $tree" >> $OUT/host_cost.log
    timeout 150 python3 -m benchmarks.host_cost --calls 100 >> $OUT/host_cost.log 2>&1
  done
done
cd $root/.gpu/trees/after && export PYTHONPATH=$PWD:/tmp/site
timeout 100 python3 -m benchmarks --only api.mask_assign.f32.16M,api.add.f32.1M --no-cupy --no-ceilings --budget 60 > $OUT/harness.log 2>&1
cd $root/.gpu/trees/before && export PYTHONPATH=$PWD:/tmp/site
timeout 100 python3 -m benchmarks --only api.mask_assign.f32.16M,api.add.f32.1M --no-cupy --no-ceilings --budget 60 >> $OUT/harness.log 2>&1
grep -E "===|in place|baseline" $OUT/host_cost.log; cat $OUT/inplace.log; grep -E "^api" $OUT/harness.log
