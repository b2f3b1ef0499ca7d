// Package reason holds the error type that carries a container's waiting
// reason, the kubelet's short CamelCase word (ErrImagePull,
// CreateContainerConfigError, ...), together with the human message that
// goes with it into the container's waiting state. Issue #30 moved it out
// of the engine so that the packages below the engine that decide such a
// reason (agent/images: a pull's ErrImagePull or ImagePullBackOff) build
// the same errors the engine reads back (Split).
//
// The reasons themselves are sentinels of the package that decides them
// (the engine's in package agent, the pulls' in agent/images); this one
// only carries them.
//
// It must not import anything of the repository: it sits below every
// package that reports a reason. hack/verify-imports.sh enforces it, for
// its tests too.
package reason
