// Package backoff is the kubelet's per-key exponential back-off, as the
// engine uses it for container restarts (CrashLoopBackOff) and image pulls
// (ImagePullBackOff). The engine builds the keys; this package only
// counts. Issue #27 took it out of the engine to make room there.
//
// It must not import anything of the repository. hack/verify-imports.sh
// enforces it, for its tests too.
package backoff
