#!/bin/bash
# profile-table.sh DIR: from the profiles crowbench -pprof DIR wrote, one markdown row per
# phase and daemon: its CPU seconds and the share of it (cumulative, %) in each component.
# The shares overlap where one component runs inside another; GC is the background marker only.
cd $1
printf "| phase | daemon | CPU s (wall s) | HTTP | writer | apply | sync+feeds | indexer | bleve merge+persist | anchor | numberer | forgetter | badger compaction+flush | GC |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
for f in *.cpu.pb.gz; do
  name=${f%.cpu.pb.gz}; phase=${name%-*}; d=${name##*-}
  top=$(go tool pprof -top -cum -nodecount=3000 $f 2>/dev/null)
  hdr=$(echo "$top" | grep -E "^Duration")
  dur=$(echo "$hdr" | sed -E 's/Duration: ([0-9.]+m?s).*/\1/'); tot=$(echo "$hdr" | sed -E 's/.*Total samples = ([0-9.]+m?s).*/\1/')
  pct() { echo "$top" | grep -E "$1" | awk '{gsub("%","",$5); if ($5+0>m) m=$5+0} END {printf "%.0f%%", m}'; }
  sum() { local s=0; for p in "$@"; do v=$(echo "$top" | grep -E "$p" | awk '{gsub("%","",$5); if ($5+0>m) m=$5+0} END {print m+0}'); s=$(echo "$s + $v" | bc); done; printf "%.0f%%" $s; }
  echo "| $phase | $d | $tot ($dur) | $(pct 'net/http.\(\*conn\).serve$') | $(pct 'store.\(\*Writer\).Serve$') | $(pct 'apply.\(\*Applier\).Serve$') | $(sum 'sync.\(\*Node\).Serve$' 'transport.*readLoop|yamux.*recvLoop') | $(pct 'search.\(\*Indexer\).Serve$') | $(sum 'scorch.\(\*Scorch\).mergerLoop$' 'scorch.\(\*Scorch\).persisterLoop$') | $(pct 'anchor.\(\*Worker\).Serve$') | $(pct 'memory.\(\*Numberer\).Serve$') | $(pct 'forget.\(\*Forgetter\).Serve$') | $(sum 'levelsController\).runCompactor$' 'badger/v4.\(\*DB\).flushMemtable$') | $(pct 'runtime.gcBgMarkWorker$') |"
done
