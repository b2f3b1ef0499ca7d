// Package podevents holds a pod's events and startup steps as values, as
// the kubelet's event recorder types do (pkg/kubelet/events and the
// involvedObject reference of its GenerateContainerRef); issue #30 moved
// them out of the engine.
//
// It owns:
//   - the event (Event): type, reason, message, the repeats folded into
//     Count, and the container it is about (ContainerFieldPath, the
//     kubelet's involvedObject.fieldPath);
//   - the bound on every message (MaxMessageBytes, TruncateMessage, cut on
//     a character boundary by ClipUTF8): a message may quote what a pod
//     wrote, so none goes out whole;
//   - a pod's ring of its latest events (Ring), folding repeats;
//   - the startup chain's steps (Step and the step names);
//   - the Observer that is told about every event, step and status, and
//     its fan-out (Observers) and no-op (Nop).
//
// The engine (package agent) records the events of its pod workers
// (podWorker.containerEvent: the pod's spec, the clock, the log), keeps a
// Ring per pod and tells its Observer; the daemon, the cluster's writers
// and cmd implement Observer.
//
// It must not import the engine (package agent), agent/daemon, cri, cni,
// cgroups, probes, cmd or test: of the repository it may use agent/manifest
// only. k8s.io/api is fine. hack/verify-imports.sh enforces it, for its
// tests too.
package podevents
