#!/usr/bin/env bash
# The second half of `make demo`: runs examples/web.yaml with the system
# containerd, waits until the pod is Running, fetches http://<pod IP>:8080/
# from the host, and then stays attached until Ctrl-C (which removes the pod).
# Without a terminal (CI, scripts) it stops the pod right after the fetch.
# With a minikubelet daemon up, `run` submits the pod to it and returns once
# the pod runs: then stopping means deleting the pod from the daemon.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=bin/minikubelet
manifest=${1:-examples/web.yaml}
log=$(mktemp /tmp/minikubelet-demo.XXXXXX)
trap 'rm -f "$log"' EXIT

echo "[demo] $bin run $manifest"
"$bin" run "$manifest" > >(tee "$log") 2>&1 &
pid=$!
# through_daemon: run submitted the pod to a daemon (its first line says so).
through_daemon() { grep -q 'submitting to the minikubelet daemon' "$log" 2>/dev/null; }
stop() {
  kill -INT "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if through_daemon; then
    echo "[demo] deleting the pod from the daemon"
    "$bin" delete -f "$manifest" --wait || echo "[demo] could not delete it: run $bin delete -f $manifest"
  fi
}
trap 'stop; rm -f "$log"; exit 130' INT TERM

ip=""
for _ in $(seq 1 1200); do # up to 120 s
  ip=$(sed -nE 's#.*default/web +status +Running ip=([0-9.]+).*#\1#p' "$log" | tail -n 1)
  [[ -n $ip ]] && break
  kill -0 "$pid" 2>/dev/null || through_daemon || { echo "[demo] minikubelet exited; see the output above"; exit 1; }
  sleep 0.1
done
[[ -n $ip ]] || { echo "[demo] the pod did not reach Running within 120 s"; stop; exit 1; }

echo "[demo] GET http://$ip:8080/"
body=""
for _ in $(seq 1 50); do
  if body=$(wget -qO- -T 2 "http://$ip:8080/" 2>/dev/null || busybox wget -qO- -T 2 "http://$ip:8080/" 2>/dev/null); then
    break
  fi
  sleep 0.1
done
[[ -n $body ]] || { echo "[demo] the pod did not answer on $ip:8080"; stop; exit 1; }
printf '[demo] the pod answered: %s\n' "$body"

if [[ -t 0 ]]; then
  echo "[demo] the pod keeps running; press Ctrl-C to stop and remove it"
  wait "$pid" || true
  # Through a daemon, run has returned with the pod running: wait here for
  # the Ctrl-C (the INT trap deletes the pod).
  if through_daemon; then
    while true; do sleep 3600; done
  fi
else
  echo "[demo] no terminal: stopping the pod"
  stop
fi
