#!/bin/bash
# reflector replies/s: workers 1, 2 (SO_REUSEPORT), 2 (shared socket); client -P 1 and 2
R=${R:-3}; V=${V:-/tmp/volley-proto} # go build -o /tmp/volley-proto ./cmd/volley at this commit
run() { # env workers P
  env $1 $V server --listen 127.0.0.1:17999 -q --tcp=false --timestamps user --workers $2 >/dev/null 2>&1 & local s=$!; sleep 0.3
  $V client 127.0.0.1:17999 -P $3 --rate max -t 4s --timestamps user --warmup 300ms -i 0 --format json 2>/dev/null | python3 -c "
import json,sys
d=json.load(sys.stdin); t=d['summary']['throughput']; c=d['summary']['counts']
print('%.0f/%.0f loss %.2f%%' % (t['probes_per_sec_up'], t['probes_per_sec_down'], c.get('loss_percent',0)))"
  kill $s; wait $s 2>/dev/null
}
for i in $(seq $R); do
  echo "round $i: w1 P1 $(run X=1 1 1) | reuse2 P1 $(run X=1 2 1) | reuse2 P2 $(run X=1 2 2) | shared2 P1 $(run VOLLEY_SHARED=1 2 1) | shared2 P2 $(run VOLLEY_SHARED=1 2 2) | w1 P2 $(run X=1 1 2)"
done
