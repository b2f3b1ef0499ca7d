// Package images holds the pure rules of the engine's image pulls (issue
// #30 moved them out of the engine):
//
//   - pull credentials (pullauth.go), as the kubelet's credential provider
//     keyring: the docker config formats (config.json and the legacy
//     .dockercfg), the keyring of credentials by registry key, which keys
//     match an image's repository, and a pull that tries each matching
//     credential in turn (PullWithCredentials, through the runtime's image
//     service as a Puller);
//   - image volumes (imagevolume.go): which of a pod's volumes are images,
//     and whether the runtime can mount them (CRI Mount.Image, containerd
//     2.1 or later), with the message refusing a pod it cannot.
//
// The engine (package agent) keeps what reads its state: it finds the
// Secrets a pod's imagePullSecrets name and reads the node's docker config
// file (pullKeyring), asks the runtime its version, pulls with back-off
// and events (pullImage, ensurePulled, pullImageVolumes) and fails the
// pods it refuses (refuseImageVolumes). A pull's error stays the
// runtime's: the engine classifies it (ErrImagePull).
//
// It must not import the engine (package agent), agent/daemon or a runtime
// leaf other than the CRI's (cni, cgroups, probes): of the repository it
// uses cri (its errors' messages, for its tests its interfaces) and may
// use agent/manifest and agent/podspec, nothing else.
// hack/verify-imports.sh enforces it, for its tests too.
package images
