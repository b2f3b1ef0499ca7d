package daemon

// Over 600 lines: the daemon as the local API's backend, one method per API verb.

// The daemon as the local API's backend (api.Backend): pods, their events,
// details, logs and exec, ConfigMaps and Secrets, health and version. Split
// from daemon.go (the loop that merges the sources and hands the set to the
// agent) to keep the engine's files under 800 lines (#18); the code is
// unchanged.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent"
	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/podevents"
	"github.com/minikubelet/minikubelet/agent/source"
	"github.com/minikubelet/minikubelet/cri"
	"github.com/minikubelet/minikubelet/probes"
)

func notFound(name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
}

// manifestErrorPods renders each manifest file the daemon could not use as
// a Failed pod named after the file, so `get pods` shows it (reason
// InvalidManifest, the loader's message).
func (d *Daemon) manifestErrorPods() []*v1.Pod {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*v1.Pod
	for _, src := range []string{source.SourceFile, source.SourceAPI} {
		for _, fe := range d.sources[src].Errors {
			name := strings.ToLower(strings.TrimSuffix(filepath.Base(fe.Path), filepath.Ext(fe.Path)))
			out = append(out, &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "manifest:" + name, Namespace: metav1.NamespaceDefault,
					Annotations: map[string]string{source.AnnotationConfigSource: src, source.AnnotationSourceFile: fe.Path}},
				Status: v1.PodStatus{Phase: v1.PodFailed, Reason: "InvalidManifest", Message: fe.Err.Error()},
			})
		}
	}
	return out
}

// ListPods implements api.Backend. Manifest files that could not be used
// are listed too, as Failed pods with reason InvalidManifest.
func (d *Daemon) ListPods(namespace string) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range append(d.a.ListPods(), d.manifestErrorPods()...) {
		if namespace == "" || p.Namespace == namespace {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// GetPod implements api.Backend.
func (d *Daemon) GetPod(namespace, name string) (*v1.Pod, error) {
	w, rejected := d.a.FindPod(namespace, name)
	switch {
	case w != nil:
		p := w.Snapshot()
		p.ResourceVersion = d.watch.hub.PodResourceVersion(p)
		return p, nil
	case rejected != nil:
		p := rejected.DeepCopy()
		p.ResourceVersion = d.watch.hub.PodResourceVersion(p)
		return p, nil
	}
	return nil, notFound(name)
}

// CreatePod implements api.Backend: the pod is validated, persisted under
// the root dir (it survives restarts and reboots) and handed to the agent.
func (d *Daemon) CreatePod(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	if w, rejected := d.a.FindPod(pod.Namespace, pod.Name); w != nil || rejected != nil {
		return nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, pod.Name)
	}
	stored, err := d.store.Add(pod)
	if err != nil {
		return nil, storeError(pod, err)
	}
	d.applyStore()
	if p, err := d.GetPod(stored.Namespace, stored.Name); err == nil {
		return p, nil
	}
	return stored, nil
}

// storeError maps the store's errors to API errors.
func storeError(pod *v1.Pod, err error) error {
	var me *manifest.ManifestError
	var pie *source.PodInvalidError
	switch {
	case errors.Is(err, source.ErrPodExists):
		return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, pod.Name)
	case errors.As(err, &pie):
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, pod.Name, pie.Errs)
	case errors.As(err, &me):
		var causes field.ErrorList
		for _, p := range me.Problems {
			causes = append(causes, field.Invalid(field.NewPath(""), nil, p))
		}
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, pod.Name, causes)
	}
	return err
}

// DeletePod implements api.Backend.
func (d *Daemon) DeletePod(ctx context.Context, namespace, name string, grace *int64) (*v1.Pod, error) {
	w, rejected := d.a.FindPod(namespace, name)
	var pod *v1.Pod // read-only
	switch {
	case w != nil:
		pod = w.Pod()
	case rejected != nil:
		pod = rejected
	default:
		return nil, notFound(name)
	}
	switch src := pod.Annotations[source.AnnotationConfigSource]; src {
	case source.SourceAPI:
	case source.SourceFile:
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, name,
			fmt.Errorf("it is a static pod from %s: remove or edit that file to delete it", pod.Annotations[source.AnnotationSourceFile]))
	default:
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, name,
			fmt.Errorf("it comes from the %q pod source (the cluster's API server): delete it there (kubectl delete pod -n %s %s)", src, namespace, name))
	}
	if w != nil {
		w.SetDeletion(grace)
	}
	if err := d.store.Delete(namespace, name); err != nil && !errors.Is(err, source.ErrPodNotFound) {
		return nil, err
	}
	d.applyStore()
	if w != nil {
		p := w.Snapshot()
		d.watch.hub.Modify(p) // deletionTimestamp set
		return p, nil
	}
	return pod.DeepCopy(), nil
}

// Events implements api.Backend.
func (d *Daemon) Events(namespace, name string) ([]v1.Event, error) {
	w, rejected := d.a.FindPod(namespace, name)
	var pod *v1.Pod
	var evs []podevents.Event
	switch {
	case w != nil:
		pod, evs = w.Snapshot(), w.Events()
	case rejected != nil:
		pod = rejected
		evs = []podevents.Event{podevents.Rejected(rejected)}
	default:
		return nil, notFound(name)
	}
	out := make([]v1.Event, 0, len(evs))
	for i, e := range evs {
		out = append(out, v1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%d", pod.Name, i), Namespace: pod.Namespace},
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, APIVersion: "v1", FieldPath: e.FieldPath},
			Reason:         e.Reason,
			Message:        e.Message,
			Type:           e.Type,
			Count:          int32(e.Count),
			FirstTimestamp: metav1.NewTime(e.FirstTimestamp),
			LastTimestamp:  metav1.NewTime(e.LastTimestamp),
			// The kubelet's component name, as on the API server (cluster mode).
			Source: v1.EventSource{Component: "kubelet", Host: d.a.NodeName()},
		})
	}
	return out, nil
}

// Details implements api.Backend: the startup trace, the probes, the
// cgroup, and where a pod that is not Ready is stuck.
func (d *Daemon) Details(namespace, name string) (*api.PodDetails, error) {
	w, rejected := d.a.FindPod(namespace, name)
	if w == nil && rejected == nil {
		return nil, notFound(name)
	}
	pod := rejected
	det := &api.PodDetails{}
	if w != nil {
		pod = w.Snapshot()
		for _, s := range w.Steps() {
			det.Steps = append(det.Steps, api.Step{Name: s.Name, Duration: s.Duration, Detail: s.Detail, At: s.At})
		}
		det.CgroupPath = d.a.PodCgroupPath(pod)
		for _, ps := range d.a.ProbeStatus(pod.UID) {
			det.Probes = append(det.Probes, probeState(pod, ps))
		}
	}
	det.Source = pod.Annotations[source.AnnotationConfigSource]
	if f := pod.Annotations[source.AnnotationSourceFile]; f != "" {
		det.Source += ":" + f
	}
	det.Stuck = stuckAt(pod, det.Probes, w != nil && w.Terminating())
	if det.Stuck != nil && det.Stuck.Step == "image" && w != nil {
		// In back-off the status only says "Back-off pulling image": the
		// registry's answer is in the last Failed event.
		evs := w.Events()
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].Reason == "Failed" && strings.HasPrefix(evs[i].Message, "Failed to pull image") {
				det.Stuck.Cause += "; last pull: " + evs[i].Message
				break
			}
		}
	}
	return det, nil
}

// probeState is what describe shows of one probe: its verdict, and the
// last run's result, with the output only of a run that failed or warned
// (one line, cut: api.CutProbeMessage), as the kubelet's events show it.
func probeState(pod *v1.Pod, ps probes.ProbeStatus) api.ProbeState {
	out := api.ProbeState{Container: ps.ContainerName, Kind: strings.ToLower(ps.Kind.String()), Result: ps.Result.String(),
		LastProbeTime: ps.LastProbeTime, Failures: ps.ConsecutiveFailures}
	if ps.Runs > 0 {
		out.LastResult = ps.LastResult.String()
		if ps.LastResult != probes.Success {
			out.LastMessage = api.CutProbeMessage(ps.LastMessage)
		}
	}
	if p := probeSpec(pod, ps.ContainerName, ps.Kind); p != nil {
		out.FailureThreshold = int(p.FailureThreshold)
		if out.FailureThreshold <= 0 {
			out.FailureThreshold = 3 // the API's default
		}
	}
	return out
}

// probeSpec is the probe of that kind of the named container, or nil.
func probeSpec(pod *v1.Pod, container string, k probes.Kind) *v1.Probe {
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if c := &list[i]; c.Name == container {
				switch k {
				case probes.Liveness:
					return c.LivenessProbe
				case probes.Readiness:
					return c.ReadinessProbe
				case probes.Startup:
					return c.StartupProbe
				}
			}
		}
	}
	return nil
}

// stuckAt names the step of the chain a pod that is not Ready waits at and
// the likely cause (nil when it is Ready or finished: Succeeded, or Failed
// other than by a rejection at admission).
func stuckAt(pod *v1.Pod, ps []api.ProbeState, terminating bool) *api.Stuck {
	st := pod.Status
	if terminating {
		return &api.Stuck{Step: "terminating", Cause: "the pod is being stopped and removed"}
	}
	if st.Phase == v1.PodFailed && strings.HasPrefix(st.Message, "Pod was rejected: ") {
		return &api.Stuck{Step: "admission", Cause: st.Message, Hint: "free node resources or change the pod's requests, nodeSelector or hostPorts"}
	}
	// A pod that finished (its containers exited and will not restart,
	// evicted, past its deadline) is done, not stuck: its sandbox is
	// stopped, which is no step it waits at.
	if st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed || conditionTrue(st.Conditions, v1.PodReady) {
		return nil
	}
	all := append(append([]v1.ContainerStatus{}, st.InitContainerStatuses...), st.ContainerStatuses...)
	for _, cs := range all {
		w := cs.State.Waiting
		if w == nil {
			continue
		}
		switch w.Reason {
		case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName":
			return &api.Stuck{Step: "image", Cause: fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, w.Message),
				Hint: "check the image name and tag, and that its registry answers from this node"}
		case "CrashLoopBackOff":
			cause := fmt.Sprintf("container %s keeps exiting (%d restarts)", cs.Name, cs.RestartCount)
			if t := cs.LastTerminationState.Terminated; t != nil {
				cause += fmt.Sprintf("; last exit code %d (%s)", t.ExitCode, t.Reason)
				if t.Reason == "OOMKilled" {
					return &api.Stuck{Step: "crash-loop", Cause: cause, Hint: "it ran out of memory: raise its memory limit"}
				}
			}
			return &api.Stuck{Step: "crash-loop", Cause: cause, Hint: fmt.Sprintf("see its last output: minikubelet logs %s -c %s --previous", pod.Name, cs.Name)}
		case "CreateContainerConfigError", "CreateContainerError":
			return &api.Stuck{Step: "create", Cause: fmt.Sprintf("container %s: %s", cs.Name, w.Message)}
		case "RunContainerError", "PostStartHookError":
			return &api.Stuck{Step: "start", Cause: fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, w.Message)}
		case "ContainerCreating", "PodInitializing":
			if strings.Contains(w.Message, "network is not ready") {
				return &api.Stuck{Step: "network", Cause: w.Message, Hint: "check the CNI conflist and plugins (minikubelet writes them at start; run hack/install-deps.sh)"}
			}
		}
	}
	if !conditionTrue(st.Conditions, v1.PodReadyToStartContainers) {
		return &api.Stuck{Step: "sandbox", Cause: "the pod sandbox (network namespace, pod IP) is not ready yet; see the events"}
	}
	for _, cs := range all {
		if cs.State.Running != nil && !cs.Ready {
			cause := fmt.Sprintf("container %s runs but is not ready", cs.Name)
			for _, p := range ps {
				if p.Container == cs.Name && (p.Kind == "readiness" || p.Kind == "startup") && p.LastMessage != "" {
					cause += fmt.Sprintf("; last %s probe: %s", p.Kind, p.LastMessage)
				}
			}
			return &api.Stuck{Step: "readiness", Cause: cause}
		}
	}
	return &api.Stuck{Step: "start", Cause: "containers are being created or started; see the events"}
}

// LogPath implements api.Backend: the log file of the instance the
// kubelet reads (validateContainerLogStatus): with previous, the instance
// the status's lastState.terminated names (in a crash loop's back-off the
// newest instance is the dead one, and it is that one); else the running
// instance, or the terminated one. The status can lag the runtime by a
// sync: a container the status does not show started yet is read from the
// runtime's newest instance, as before the status had one.
func (d *Daemon) LogPath(namespace, name, container string, previous bool) (string, error) {
	pod, err := d.GetPod(namespace, name)
	if err != nil {
		return "", err
	}
	if container == "" {
		if len(pod.Spec.Containers) != 1 {
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be given for pod %s: choose one of %s", name, containerNames(pod)))
		}
		container = pod.Spec.Containers[0].Name
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.a.RuntimeTimeout())
	defer cancel()
	id, err := logContainerID(pod, container, previous)
	if err != nil {
		var ni noLogInstanceError
		if previous || !errors.As(err, &ni) {
			return "", apierrors.NewBadRequest(err.Error())
		}
		cid, _, found, oerr := d.a.LatestContainer(ctx, pod, container)
		if oerr != nil {
			return "", oerr
		}
		if !found {
			return "", apierrors.NewBadRequest(err.Error())
		}
		id = cid
	}
	resp, err := d.a.Runtime().ContainerStatus(ctx, id, false)
	if cri.IsNotFound(err) {
		return "", apierrors.NewBadRequest(fmt.Sprintf("the log of container %q in pod %q is gone: its instance %s was removed from the runtime", container, name, id))
	}
	if err != nil {
		return "", err
	}
	return resp.GetStatus().GetLogPath(), nil
}

// noLogInstanceError is logContainerID's answer for a container whose
// status names no instance yet (waiting, or no status).
type noLogInstanceError struct{ msg string }

func (e noLogInstanceError) Error() string { return e.msg }

// logContainerID is the kubelet's validateContainerLogStatus: the runtime
// ID of the instance whose log `logs` (previous: `logs -p`) reads,
// from the pod's status; its errors are the kubelet's, word for word.
func logContainerID(pod *v1.Pod, container string, previous bool) (string, error) {
	var cs *v1.ContainerStatus
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == container {
				cs = &list[i]
			}
		}
		if cs != nil {
			break
		}
	}
	if cs == nil {
		return "", noLogInstanceError{fmt.Sprintf("container %q in pod %q is not available", container, pod.Name)}
	}
	last := cs.LastTerminationState.Terminated
	id := func(full string) string {
		_, s, _ := strings.Cut(full, "://")
		return s
	}
	switch running, terminated, waiting := cs.State.Running, cs.State.Terminated, cs.State.Waiting; {
	case previous:
		if last == nil || last.ContainerID == "" {
			return "", fmt.Errorf("previous terminated container %q in pod %q not found", container, pod.Name)
		}
		return id(last.ContainerID), nil
	case running != nil:
		return id(cs.ContainerID), nil
	case terminated != nil:
		if terminated.ContainerID != "" {
			return id(terminated.ContainerID), nil
		}
		if last != nil && last.ContainerID != "" {
			return id(last.ContainerID), nil
		}
		return "", fmt.Errorf("container %q in pod %q is terminated", container, pod.Name)
	case last != nil:
		if last.ContainerID == "" {
			return "", fmt.Errorf("container %q in pod %q is terminated", container, pod.Name)
		}
		return id(last.ContainerID), nil
	case waiting != nil:
		switch waiting.Reason {
		case "ErrImagePull":
			return "", fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", container, pod.Name)
		case "ImagePullBackOff":
			return "", fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", container, pod.Name)
		}
		return "", noLogInstanceError{fmt.Sprintf("container %q in pod %q is waiting to start: %s", container, pod.Name, waiting.Reason)}
	}
	return "", noLogInstanceError{fmt.Sprintf("container %q in pod %q is waiting to start - no logs yet", container, pod.Name)}
}

func containerNames(pod *v1.Pod) string {
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	return "[" + strings.Join(names, " ") + "]"
}

// Exec implements api.Backend.
func (d *Daemon) Exec(ctx context.Context, namespace, name, container string, cmd []string, timeout time.Duration) (*api.ExecResult, error) {
	pod, err := d.GetPod(namespace, name)
	if err != nil {
		return nil, err
	}
	if container == "" {
		container = pod.Spec.Containers[0].Name
	}
	id, state, found, err := d.a.LatestContainer(ctx, pod, container)
	if err != nil {
		return nil, err
	}
	if !found || state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("container %q of pod %s is not running", container, name))
	}
	stdout, stderr, err := d.a.Runtime().ExecSync(ctx, id, cmd, timeout)
	res := &api.ExecResult{Stdout: stdout, Stderr: stderr}
	var ee *cri.ExitError
	switch {
	case errors.As(err, &ee):
		res.ExitCode = int(ee.ExitCode)
	case err != nil:
		if se := execStartError(cmd, container, name, err); se != nil {
			return nil, se
		}
		return nil, err
	}
	return res, nil
}

// execStartError names the command the runtime could not start (not
// found, not executable) with the runtime's own reason, the part of its
// message kubectl shows through the kubelet's stream (`exec: "foo":
// executable file not found in $PATH`), without the gRPC and OCI layers
// around it: a 500 as the kubelet's, its message without the "Internal
// error occurred" prefix. nil for any other error.
func execStartError(cmd []string, container, pod string, err error) error {
	msg := cri.Message(err)
	i := strings.Index(msg, `exec: "`)
	if i < 0 || len(cmd) == 0 {
		return nil
	}
	reason := strings.TrimSuffix(msg[i:], ": unknown")
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
		Reason: metav1.StatusReasonInternalError,
		Message: fmt.Sprintf("command %q could not be run in container %q of pod %s: %s (check the command's name and the container's PATH)",
			cmd[0], container, pod, reason)}}
}

// Healthz implements api.Backend: the sync loop relists.
func (d *Daemon) Healthz() error {
	last := d.a.LastRelist()
	if last.IsZero() || d.a.Clock().Since(last) < 3*time.Minute {
		return nil // the kubelet's PLEG threshold: 3 minutes without a relist
	}
	return fmt.Errorf("no successful relist since %s", last.Format(time.RFC3339))
}

// Readyz implements api.Backend: the runtime and the pod network are ready.
func (d *Daemon) Readyz() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ok, reason, msg, err := d.a.NetworkReady(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("runtime: %w", err)
	case !ok:
		return fmt.Errorf("pod network not ready: %s %s", reason, msg)
	}
	return nil
}

// Version implements api.Backend.
func (d *Daemon) Version() api.VersionInfo {
	return api.VersionInfo{Version: d.cfg.Version, RuntimeName: d.cfg.RuntimeName, RuntimeVersion: d.cfg.RuntimeVersion,
		RuntimeAPIVersion: d.cfg.RuntimeAPIVersion, NodeName: d.a.NodeName()}
}

// WriteMetrics implements api.Backend.
func (d *Daemon) WriteMetrics(w io.Writer) error { return d.a.WriteMetrics(w) }

// Resources of the ConfigMaps and Secrets, for API errors.
var (
	configMapsResource = schema.GroupResource{Resource: "configmaps"}
	secretsResource    = schema.GroupResource{Resource: "secrets"}
)

// fileDefines reports whether the manifest directory defines the ConfigMap
// (secret false) or Secret namespace/name.
func (d *Daemon) fileDefines(secret bool, namespace, name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	file := d.sources[source.SourceFile]
	if secret {
		return slices.ContainsFunc(file.Secrets, func(s *v1.Secret) bool { return s.Namespace == namespace && s.Name == name })
	}
	return slices.ContainsFunc(file.ConfigMaps, func(c *v1.ConfigMap) bool { return c.Namespace == namespace && c.Name == name })
}

// configStoreError maps the store's errors about a ConfigMap or Secret to
// API errors.
func configStoreError(kind string, gr schema.GroupResource, name string, err error) error {
	var cie *source.ConfigInvalidError
	switch {
	case errors.Is(err, source.ErrConfigDataExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, source.ErrConfigDataNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.As(err, &cie):
		return apierrors.NewInvalid(schema.GroupKind{Kind: kind}, name, cie.Errs)
	}
	return err
}

// CreateConfigMap implements api.Backend: the ConfigMap is defaulted,
// validated as in a manifest file, persisted under the root dir and handed
// to the agent before this returns, so a pod created next sees it. A name
// the manifest directory already defines is AlreadyExists.
func (d *Daemon) CreateConfigMap(ctx context.Context, cm *v1.ConfigMap) (*v1.ConfigMap, error) {
	if cm.Namespace == "" {
		cm.Namespace = metav1.NamespaceDefault
	}
	if cm.Name != "" && d.fileDefines(false, cm.Namespace, cm.Name) {
		return nil, apierrors.NewAlreadyExists(configMapsResource, cm.Name)
	}
	stored, err := d.store.AddConfigMap(cm)
	if err != nil {
		return nil, configStoreError("ConfigMap", configMapsResource, cm.Name, err)
	}
	d.applyStore()
	return stored, nil
}

// CreateSecret implements api.Backend, as CreateConfigMap.
func (d *Daemon) CreateSecret(ctx context.Context, secret *v1.Secret) (*v1.Secret, error) {
	if secret.Namespace == "" {
		secret.Namespace = metav1.NamespaceDefault
	}
	if secret.Name != "" && d.fileDefines(true, secret.Namespace, secret.Name) {
		return nil, apierrors.NewAlreadyExists(secretsResource, secret.Name)
	}
	stored, err := d.store.AddSecret(secret)
	if err != nil {
		return nil, configStoreError("Secret", secretsResource, secret.Name, err)
	}
	d.applyStore()
	return stored, nil
}

// DeleteConfigMap implements api.Backend. One defined in the manifest
// directory is Forbidden: its file is what to edit. Pods that use it keep
// running; their volumes keep the last content, and containers started
// later fail as the kubelet's do (CreateContainerConfigError) unless the
// reference is optional.
func (d *Daemon) DeleteConfigMap(ctx context.Context, namespace, name string) error {
	if d.fileDefines(false, namespace, name) {
		return apierrors.NewForbidden(configMapsResource, name,
			errors.New("it is defined in the manifest directory: remove it from its file to delete it"))
	}
	if err := d.store.DeleteConfigMap(namespace, name); err != nil {
		return configStoreError("ConfigMap", configMapsResource, name, err)
	}
	d.applyStore()
	return nil
}

// DeleteSecret implements api.Backend, as DeleteConfigMap.
func (d *Daemon) DeleteSecret(ctx context.Context, namespace, name string) error {
	if d.fileDefines(true, namespace, name) {
		return apierrors.NewForbidden(secretsResource, name,
			errors.New("it is defined in the manifest directory: remove it from its file to delete it"))
	}
	if err := d.store.DeleteSecret(namespace, name); err != nil {
		return configStoreError("Secret", secretsResource, name, err)
	}
	d.applyStore()
	return nil
}

// ListConfigMaps implements api.Backend: the node's ConfigMaps of a
// namespace ("" = all) from both node sources, as the node's pods see
// them, sorted by namespace and name (the cluster's are the API server's
// to list).
func (d *Daemon) ListConfigMaps(namespace string) []*v1.ConfigMap {
	d.mu.Lock()
	set := d.mergedConfigLocked(false)[agent.ConfigScopeNode]
	d.mu.Unlock()
	var out []*v1.ConfigMap
	for _, cm := range set.ConfigMaps {
		if namespace == "" || cm.Namespace == namespace {
			out = append(out, cm.DeepCopy())
		}
	}
	slices.SortFunc(out, func(a, b *v1.ConfigMap) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}

// ListSecrets implements api.Backend, as ListConfigMaps. The data is
// included, as the API server does; the socket is root's only.
func (d *Daemon) ListSecrets(namespace string) []*v1.Secret {
	d.mu.Lock()
	set := d.mergedConfigLocked(false)[agent.ConfigScopeNode]
	d.mu.Unlock()
	var out []*v1.Secret
	for _, s := range set.Secrets {
		if namespace == "" || s.Namespace == namespace {
			out = append(out, s.DeepCopy())
		}
	}
	slices.SortFunc(out, func(a, b *v1.Secret) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}

// conditionTrue reports whether the condition of that type is True (as
// agent/podstatus's ConditionTrue).
func conditionTrue(cs []v1.PodCondition, t v1.PodConditionType) bool {
	for _, c := range cs {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
