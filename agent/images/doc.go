// Package images is the engine's image manager, as the kubelet's
// pkg/kubelet/images.ImageManager (EnsureImageExists) sits apart from the
// kubelet; issue #30 moved it out of the engine:
//
//   - the Manager (manager.go) makes a container's image present according
//     to its pull policy, with the kubelet's events ("already present",
//     Pulling, Pulled, Failed, ErrImageNeverPull) and the image step of the
//     pod's start; a pull cancelled with its context is no failure and
//     starts no back-off. It pulls a pod's images while the engine creates
//     its sandbox (PullAll), and its image volumes' images before any
//     container starts, with the pull back-off (PullVolumes);
//   - pull credentials (pullauth.go), as the kubelet's credential provider
//     keyring: the pod's pull secrets and the node's docker config file
//     (Keyring), the docker config formats (config.json and the legacy
//     .dockercfg), which registry keys match an image's repository, and a
//     pull that tries each matching credential in turn (PullWithCredentials);
//   - image volumes (imagevolume.go): which of a pod's volumes are images,
//     whether the runtime can mount them (CRI Mount.Image, containerd 2.1
//     or later), with the message refusing a pod it cannot (RefuseVolumes),
//     and the CRI images a container mounts (ContainerVolumes);
//   - the pulls' reasons (ErrImagePull, ErrImageNeverPull,
//     ImagePullBackOff), which the engine exports as its own; they are
//     carried by agent/reason's errors.
//
// The Manager keeps no state: the engine builds one per use from its image
// service, clock, pull back-off (the engine's, shared with its container
// start checks), Secret lookup (its config store), docker config file and
// runtime version (a RuntimeVersion it keeps). Events and steps go back to
// the pod's worker through a Report of callbacks. The engine keeps what
// needs its pod worker: failing a pod the runtime cannot serve
// (refuseImageVolumes), the container back-off checks and the reasons it
// records.
//
// It must not import the engine (package agent), agent/daemon or a runtime
// leaf other than the CRI's (cni, cgroups, probes): of the repository it
// uses cri (its errors' messages), agent/reason (the reasons' errors) and
// agent/podspec (an image volume's CRI image), and may use agent/manifest,
// nothing else. hack/verify-imports.sh enforces it, for its tests too.
package images
