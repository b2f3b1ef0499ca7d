// Package fingerprint renders a pod's runtime objects and their states as
// one string, the way the engine's relister and its pod workers compare
// what the runtime lists with what a worker last observed, and decides
// whether a runtime container event tells a worker anything its newest
// observation does not (Covers): a worker's own sync ends by observing
// what it created and started, so the events of its own changes need no
// second sync.
//
// It is pure: it imports nothing of the repository, only the CRI's message
// types. hack/verify-imports.sh enforces it, for its tests too.
package fingerprint
