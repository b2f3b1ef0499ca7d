// Package stopgate lets the stops of a mass deletion go before the
// removals. A pod's teardown has two halves: stop (its containers with
// their grace period, then its sandbox, whose CNI DEL releases the IP) and
// remove (the sandbox and containers from the runtime, the pod cgroup, its
// directories). When a hundred pods are deleted at once on two cores, the
// first pods' removals ran beside the later pods' stops and slowed them:
// the last pod was down (nothing running, its IP released) later than
// with the kubelet, whose removals wait for its garbage collection.
//
// A teardown holds its removal while other pods are being stopped and
// their stops keep ending: once none has ended for a while (a stop that
// waits out a long grace period), or after a bound that grows with the
// number of pods being stopped (HoldRemoval), the removal goes on.
// A lone pod's removal is never held, and one deleted beside a pod with a
// long grace period is held for the quiet period only.
//
// It must not import anything of the repository. hack/verify-imports.sh
// enforces it, for its tests too.
package stopgate
