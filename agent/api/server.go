package api

// Over 600 lines: the route table of the local API and the handlers of its plain
// verbs, side by side so that every route is seen at once; watch
// (watch*.go), logs, apply and patch are already apart.

// This file is the HTTP side of the API: Kubernetes-shaped routes over a
// Backend, JSON in and out (YAML accepted on create), errors as
// metav1.Status with the HTTP code the API server would use.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/pprof"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/validation/field"
	strictjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/agent/manifest/decodeerr"
	"github.com/minikubelet/minikubelet/agent/streaming"
)

// DefaultMaxBodyBytes is the request body limit when Options leaves it 0.
const DefaultMaxBodyBytes = 1 << 20

// Options tunes a Server.
type Options struct {
	// MaxBodyBytes limits request bodies; a larger body is a 413
	// (0: DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// LogPollInterval is how often a followed log is checked for new lines
	// (0: 100ms).
	LogPollInterval time.Duration
	// EventPollInterval is how often an event watch looks for new events
	// (0: 500ms).
	EventPollInterval time.Duration
	// Profiling serves Go's runtime profiles under /debug/pprof/ (the
	// daemon's --enable-profiling, for the benchmark and for debugging).
	Profiling bool
	// Streams serves kubectl exec -it, attach, cp and port-forward: their
	// upgraded connections go to the CRI streaming server, as the
	// kubelet's do (nil: those requests are a 503; a non-interactive
	// exec, minikubelet exec, runs through Backend.Exec either way).
	Streams streaming.Runtime
}

// Server serves the API over a Backend.
type Server struct {
	backend Backend
	logger  *slog.Logger
	opts    Options
	handler http.Handler
	// streams is the parent of long-lived responses (followed logs); it is
	// cancelled when Serve's context ends so that they let shutdown finish.
	streams    context.Context
	stopStream context.CancelFunc
	// started is when the server was made: the Node's creation time.
	started time.Time
}

// NewServer returns a Server answering from b.
func NewServer(b Backend, logger *slog.Logger, opts Options) *Server {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.LogPollInterval <= 0 {
		opts.LogPollInterval = defaultLogPoll
	}
	s := &Server{backend: b, logger: logger.With("component", "api"), opts: opts, started: time.Now().Truncate(time.Second)}
	s.streams, s.stopStream = context.WithCancel(context.Background())
	s.handler = s.routes()
	return s
}

// Handler returns the API's http.Handler.
func (s *Server) Handler() http.Handler { return s.handler }

// route is a handler that returns its error for the caller to write as a
// Status; methods maps each allowed method to its handler.
type route map[string]func(w http.ResponseWriter, r *http.Request) error

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern string, rt route) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			h, ok := rt[r.Method]
			if !ok && r.Method == http.MethodHead {
				h, ok = rt[http.MethodGet]
			}
			if !ok {
				allowed := make([]string, 0, len(rt))
				for m := range rt {
					allowed = append(allowed, m)
				}
				slices.Sort(allowed)
				w.Header().Set("Allow", strings.Join(allowed, ", "))
				s.writeError(w, r, methodNotAllowed(r.Method, r.URL.Path))
				return
			}
			if err := checkMediaType(r); err != nil {
				s.writeError(w, r, err)
				return
			}
			if err := refuseDryRun(r); err != nil {
				s.writeError(w, r, err)
				return
			}
			if err := h(w, r); err != nil {
				s.writeError(w, r, err)
			}
		})
	}
	const pods = "/api/v1/namespaces/{ns}/pods"
	handle("/api/v1/pods", route{http.MethodGet: s.listPods})
	handle(pods, route{http.MethodGet: s.listPods, http.MethodPost: s.createPod})
	handle(pods+"/{name}", route{http.MethodGet: s.getPod, http.MethodPut: s.replacePod, http.MethodDelete: s.deletePod, http.MethodPatch: s.patchPod})
	handle(pods+"/{name}/log", route{http.MethodGet: s.podLog})
	// WebSocket clients (kubectl's first choice) upgrade a GET, SPDY
	// clients a POST: the API server takes both.
	handle(pods+"/{name}/exec", route{http.MethodGet: s.podExec, http.MethodPost: s.podExec})
	handle(pods+"/{name}/attach", route{http.MethodGet: s.podAttach, http.MethodPost: s.podAttach})
	handle(pods+"/{name}/portforward", route{http.MethodGet: s.podPortForward, http.MethodPost: s.podPortForward})
	handle(pods+"/{name}/details", route{http.MethodGet: s.podDetails})
	handle(pods+"/{name}/status", route{http.MethodGet: s.getPod})
	handle("/api", route{http.MethodGet: s.apiVersions})
	handle("/api/v1", route{http.MethodGet: s.apiV1Resources})
	handle("/apis", route{http.MethodGet: s.apiGroups})
	handle("/openapi/v3", route{http.MethodGet: s.openAPIV3Root})
	handle("/openapi/v3/api/v1", route{http.MethodGet: s.openAPIV3CoreV1})
	handle("/api/v1/namespaces", route{http.MethodGet: s.listNamespaces})
	handle("/api/v1/namespaces/{ns}", route{http.MethodGet: s.getNamespace})
	handle("/api/v1/nodes", route{http.MethodGet: s.listNodes})
	handle("/api/v1/nodes/{name}", route{http.MethodGet: s.getNode})
	handle("/api/v1/nodes/{name}/details", route{http.MethodGet: s.nodeDetails}) // node_details.go
	const (
		configMaps = "/api/v1/namespaces/{ns}/configmaps"
		secrets    = "/api/v1/namespaces/{ns}/secrets"
	)
	handle("/api/v1/configmaps", route{http.MethodGet: s.listConfigMaps})
	handle(configMaps, route{http.MethodGet: s.listConfigMaps, http.MethodPost: s.createConfigMap})
	handle(configMaps+"/{name}", route{http.MethodGet: s.getConfigMap, http.MethodDelete: s.deleteConfigMap, http.MethodPatch: s.patchConfigMap})
	handle("/api/v1/secrets", route{http.MethodGet: s.listSecrets})
	handle(secrets, route{http.MethodGet: s.listSecrets, http.MethodPost: s.createSecret})
	handle(secrets+"/{name}", route{http.MethodGet: s.getSecret, http.MethodDelete: s.deleteSecret, http.MethodPatch: s.patchSecret})
	handle("/api/v1/events", route{http.MethodGet: s.listEvents})
	handle("/api/v1/namespaces/{ns}/events", route{http.MethodGet: s.listEvents})
	handle("/healthz", route{http.MethodGet: s.check(s.backend.Healthz)})
	handle("/readyz", route{http.MethodGet: s.check(s.backend.Readyz)})
	handle("/metrics", route{http.MethodGet: s.metrics})
	handle("/version", route{http.MethodGet: s.version})
	if s.opts.Profiling {
		mux.HandleFunc("/debug/pprof/", requireMediaType(pprof.Index))
		mux.HandleFunc("/debug/pprof/cmdline", requireMediaType(pprof.Cmdline))
		mux.HandleFunc("/debug/pprof/profile", requireMediaType(pprof.Profile))
		mux.HandleFunc("/debug/pprof/symbol", requireMediaType(pprof.Symbol))
		mux.HandleFunc("/debug/pprof/trace", requireMediaType(pprof.Trace))
	}
	handle("/", route{
		http.MethodGet: s.notFound, http.MethodPost: s.notFound, http.MethodPut: s.notFound,
		http.MethodPatch: s.notFound, http.MethodDelete: s.notFound,
	})
	return mux
}

// writeError writes err as a Status. A 5xx is logged here, where it is
// handled; client errors are the client's business.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	st := toStatus(err)
	if st.Code >= 500 {
		s.logger.Error("API request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, int(st.Code), st)
}

// writeJSON writes v as the JSON body with the status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(toStatus(fmt.Errorf("encode response: %w", err)))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) error {
	return notFoundPath(r.URL.Path)
}

func (s *Server) listPods(w http.ResponseWriter, r *http.Request) error {
	sel, err := podSelection(r)
	if err != nil {
		return err
	}
	watching, err := queryBool(r, "watch")
	if err != nil {
		return err
	}
	if watching {
		return s.watchPods(w, r, sel)
	}
	// Read before the list: a watch from it replays what the list missed.
	rv := s.backend.PodsResourceVersion()
	pods := s.backend.ListPods(r.PathValue("ns"))
	list := v1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Items: make([]v1.Pod, 0, len(pods))}
	list.ResourceVersion = rv
	for _, p := range pods {
		if !sel.selects(p) {
			continue
		}
		// A shallow copy: only its own type meta is set, the rest is
		// only read (encoded).
		pod := *p
		pod.APIVersion, pod.Kind = "v1", "Pod"
		list.Items = append(list.Items, pod)
	}
	slices.SortFunc(list.Items, func(a, b v1.Pod) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	if t, ok := wantTable(r); ok {
		ptrs := make([]*v1.Pod, len(list.Items))
		for i := range list.Items {
			ptrs[i] = &list.Items[i]
		}
		tab := podTable(ptrs, t)
		tab.ResourceVersion = rv
		writeJSON(w, http.StatusOK, tab)
		return nil
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (s *Server) getPod(w http.ResponseWriter, r *http.Request) error {
	pod, err := s.backend.GetPod(r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return err
	}
	if t, ok := wantTable(r); ok {
		writeJSON(w, http.StatusOK, podTable([]*v1.Pod{pod}, t))
		return nil
	}
	writePod(w, http.StatusOK, pod)
	return nil
}

// writePod writes a pod with its type meta set (on a shallow copy: the
// backend's pod is only read).
func writePod(w http.ResponseWriter, code int, pod *v1.Pod) {
	out := *pod
	out.APIVersion, out.Kind = "v1", "Pod"
	writeJSON(w, code, &out)
}

// readBody reads the request body up to the limit; a larger body is a 413.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("read request body: %v", err))
	}
	return b, nil
}

// bodyJSON returns the body as JSON: YAML bodies (Content-Type
// application/yaml) are converted, JSON is passed through. A body without
// a Content-Type is refused (requireMediaType already did, before routing).
func bodyJSON(r *http.Request, body []byte) ([]byte, error) {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil {
		mt = ct
	}
	switch mt {
	case "application/json":
		return body, nil
	case protobufMediaType:
		return protobufToJSON(body)
	case "application/yaml", "application/x-yaml", "text/yaml":
		// The converter reads the first document only: refuse the others
		// rather than drop them.
		if n := yamlDocuments(body); n > 1 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the body holds %d YAML documents: send one object per request (minikubelet run FILE submits every object of a file)", n))
		}
		j, err := yaml.YAMLToJSONStrict(body)
		if err != nil {
			return nil, apierrors.NewBadRequest("decode YAML body: " + decodeerr.LocateYAML(err.Error(), body, 0))
		}
		return j, nil
	}
	return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format %q: accepted media types are application/json and application/yaml", mt),
	}}
}

// yamlDocuments counts the documents of a YAML stream that hold more than
// blank lines and comments; documents are separated by "---" lines.
func yamlDocuments(body []byte) int {
	n, content := 0, false
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		if rest, ok := bytes.CutPrefix(line, []byte("---")); ok {
			if rest = bytes.TrimSpace(rest); len(rest) == 0 || rest[0] == '#' {
				if content {
					n++
				}
				content = false
				continue
			}
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			content = true
		}
	}
	if content {
		n++
	}
	return n
}

// readPodJSON reads a request body that must hold a v1 Pod (POST, PUT)
// and returns it as JSON (bodyJSON); an empty body is a 400.
func (s *Server) readPodJSON(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, apierrors.NewBadRequest("the request body is empty: send a v1 Pod")
	}
	return bodyJSON(r, body)
}

func (s *Server) createPod(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	j, err := s.readPodJSON(w, r)
	if err != nil {
		return err
	}
	// Another kind would fail the strict decoding on its own fields: say
	// what is wrong first.
	var tm metav1.TypeMeta
	if json.Unmarshal(j, &tm) == nil && ((tm.APIVersion != "" && tm.APIVersion != "v1") || (tm.Kind != "" && tm.Kind != "Pod")) {
		return apierrors.NewBadRequest(fmt.Sprintf("the body is apiVersion %q, kind %q: this path takes apiVersion v1, kind Pod", tm.APIVersion, tm.Kind))
	}
	var pod v1.Pod
	strictErrs, err := strictjson.UnmarshalStrict(j, &pod)
	if err != nil {
		// Where: "spec.containers[0].resources.limits[memory]: Invalid value: …".
		return apierrors.NewBadRequest("decode pod: " + decodeerr.Problem(j, reflect.TypeFor[v1.Pod](), nil, err))
	}
	if len(strictErrs) > 0 {
		return strictDecodingError(podsResource.Resource, pod.Name, strictErrs)
	}
	if (pod.APIVersion != "" && pod.APIVersion != "v1") || (pod.Kind != "" && pod.Kind != "Pod") {
		return apierrors.NewBadRequest(fmt.Sprintf("the body is %s %s: this path takes apiVersion v1, kind Pod", pod.APIVersion, pod.Kind))
	}
	switch pod.Namespace {
	case "":
		pod.Namespace = ns
	case ns:
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("the namespace of the provided object (%q) does not match the namespace sent on the request (%q)", pod.Namespace, ns))
	}
	pod.APIVersion, pod.Kind = "v1", "Pod"
	created, err := s.backend.CreatePod(r.Context(), &pod)
	if err != nil {
		return err
	}
	writePod(w, http.StatusCreated, created)
	return nil
}

func (s *Server) deletePod(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var grace *int64
	if len(bytes.TrimSpace(body)) > 0 {
		j, err := bodyJSON(r, body)
		if err != nil {
			return err
		}
		var opts metav1.DeleteOptions
		if err := json.Unmarshal(j, &opts); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("decode DeleteOptions: %v", err))
		}
		grace = opts.GracePeriodSeconds
	}
	if v := r.URL.Query().Get("gracePeriodSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("gracePeriodSeconds %q is not an integer", v))
		}
		grace = &n
	}
	if grace != nil && *grace < 0 {
		return apierrors.NewBadRequest(fmt.Sprintf("gracePeriodSeconds must be 0 or more, not %d", *grace))
	}
	pod, err := s.backend.DeletePod(r.Context(), r.PathValue("ns"), r.PathValue("name"), grace)
	if err != nil {
		return err
	}
	writePod(w, http.StatusOK, pod)
	return nil
}

// containerFor resolves the container a log, exec or attach request is
// about: the one named (an ephemeral one too), or the pod's only container (init containers excluded, like
// kubectl's default when there is no default-container annotation).
func containerFor(pod *v1.Pod, name string) (string, error) {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return name, nil
		}
		names = append(names, c.Name)
	}
	var main []string
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return name, nil
		}
		main = append(main, c.Name)
	}
	names = append(names, main...)
	if name != "" {
		// An ephemeral container is valid when named, as the API server's
		// stream location takes it (kubectl attach/exec/logs -c debugger);
		// never a default.
		for _, c := range pod.Spec.EphemeralContainers {
			if c.Name == name {
				return name, nil
			}
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s: choose one of: [%s]", name, pod.Name, strings.Join(names, " ")))
	}
	if c := pod.Annotations["kubectl.kubernetes.io/default-container"]; c != "" && slices.Contains(names, c) {
		return c, nil
	}
	if len(main) == 1 {
		return main[0], nil
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: [%s]", pod.Name, strings.Join(names, " ")))
}

// queryBool parses a boolean query parameter (absent: false).
func queryBool(r *http.Request, key string) (bool, error) {
	v := r.URL.Query().Get(key)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, apierrors.NewBadRequest(fmt.Sprintf("%s %q is not a boolean", key, v))
	}
	return b, nil
}

// queryInt parses a non-negative integer query parameter (absent: nil).
func queryInt(r *http.Request, key string) (*int64, error) {
	v := r.URL.Query().Get(key)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s %q must be an integer, 0 or more", key, v))
	}
	return &n, nil
}

func (s *Server) podLog(w http.ResponseWriter, r *http.Request) error {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	var opts LogOptions
	follow, err := queryBool(r, "follow")
	if err != nil {
		return err
	}
	previous, err := queryBool(r, "previous")
	if err != nil {
		return err
	}
	if opts.Timestamps, err = queryBool(r, "timestamps"); err != nil {
		return err
	}
	if opts.TailLines, err = queryInt(r, "tailLines"); err != nil {
		return err
	}
	limit, err := queryInt(r, "limitBytes")
	if err != nil {
		return err
	}
	since, err := queryInt(r, "sinceSeconds")
	if err != nil {
		return err
	}
	sinceTime := r.URL.Query().Get("sinceTime")
	// The API server's ValidatePodLogOptions, as a 422 naming the field.
	var invalid field.ErrorList
	if limit != nil && *limit <= 0 {
		invalid = append(invalid, field.Invalid(field.NewPath("limitBytes"), *limit, "must be greater than 0"))
	}
	switch {
	case since != nil && sinceTime != "":
		invalid = append(invalid, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case since != nil && *since < 1:
		invalid = append(invalid, field.Invalid(field.NewPath("sinceSeconds"), *since, "must be greater than 0"))
	}
	if len(invalid) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, name, invalid)
	}
	if limit != nil {
		opts.LimitBytes = *limit
	}
	if since != nil {
		opts.Since = time.Now().Add(-time.Duration(*since) * time.Second)
	}
	if sinceTime != "" {
		t, err := time.Parse(time.RFC3339, sinceTime)
		if err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("sinceTime %q is not an RFC3339 time", sinceTime))
		}
		opts.Since = t
	}
	pod, err := s.backend.GetPod(ns, name)
	if err != nil {
		return err
	}
	container, err := containerFor(pod, r.URL.Query().Get("container"))
	if err != nil {
		return err
	}
	path, err := s.backend.LogPath(ns, name, container, previous)
	if err != nil {
		return err
	}
	// Refused before the 200 is written: ReadLog serves regular files only
	// (it would refuse a symlink or FIFO after the header, with an empty body).
	if fi, err := os.Lstat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return apierrors.NewBadRequest(fmt.Sprintf("container %q in pod %q has no log yet", container, name))
		}
		return err
	} else if !fi.Mode().IsRegular() {
		return apierrors.NewInternalError(fmt.Errorf("the log of container %q in pod %q is not a regular file (%s): refused", container, name, fi.Mode().Type()))
	}
	// A previous instance has exited: there is nothing to follow.
	opts.Follow = follow && !previous
	opts.PollInterval = s.opts.LogPollInterval
	if opts.Follow {
		opts.Done = s.containerGone(ns, name, container, containerID(pod, container))
	}

	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.streams, cancel)
	defer stop()
	if err := ReadLog(ctx, path, opts, w); err != nil {
		// The status line is sent: all that is left is to log it.
		s.logger.Warn("Log stream ended with an error", "pod", ns+"/"+name, "container", container, "err", err)
	}
	return nil
}

// containerID returns the ID of the container's current instance ("" if
// it has none).
func containerID(pod *v1.Pod, container string) string {
	if cs := findStatus(pod, container); cs != nil {
		return cs.ContainerID
	}
	return ""
}

// findStatus returns the status of a container or init container.
func findStatus(pod *v1.Pod, container string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == container {
				return &list[i]
			}
		}
	}
	return nil
}

// containerGone returns a LogOptions.Done that reports when the followed
// container instance is no longer the running one: the pod is gone, the
// container stopped, or a new instance replaced it (its log is another
// file). A container without a status yet counts as still there.
func (s *Server) containerGone(ns, name, container, id string) func() bool {
	return func() bool {
		pod, err := s.backend.GetPod(ns, name)
		if apierrors.IsNotFound(err) {
			return true
		}
		if err != nil {
			return false
		}
		cs := findStatus(pod, container)
		if cs == nil {
			return false
		}
		return cs.State.Running == nil || (id != "" && cs.ContainerID != id)
	}
}

func (s *Server) podExec(w http.ResponseWriter, r *http.Request) error {
	if httpstream.IsUpgradeRequest(r) || r.Method == http.MethodGet {
		return s.stream(w, r, "exec")
	}
	ns, name := r.PathValue("ns"), r.PathValue("name")
	q := r.URL.Query()
	cmd := q["command"]
	if len(cmd) == 0 {
		return apierrors.NewBadRequest("you must specify at least one command for the container")
	}
	for _, k := range []string{"stdin", "tty"} {
		if b, _ := queryBool(r, k); b {
			return apierrors.NewBadRequest("stdin and tty need a streaming connection (an upgrade to SPDY or WebSocket): use minikubelet exec -it or kubectl exec -it")
		}
	}
	var timeout time.Duration
	if v := q.Get("timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			n, nerr := strconv.Atoi(v)
			if nerr != nil {
				return apierrors.NewBadRequest(fmt.Sprintf("timeout %q is neither a duration nor a number of seconds", v))
			}
			d = time.Duration(n) * time.Second
		}
		if d < 0 {
			return apierrors.NewBadRequest(fmt.Sprintf("timeout %q is negative", v))
		}
		timeout = d
	}
	pod, err := s.backend.GetPod(ns, name)
	if err != nil {
		return err
	}
	container, err := containerFor(pod, q.Get("container"))
	if err != nil {
		return err
	}
	res, err := s.backend.Exec(r.Context(), ns, name, container, cmd, timeout)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) podAttach(w http.ResponseWriter, r *http.Request) error {
	return s.stream(w, r, "attach")
}

func (s *Server) podPortForward(w http.ResponseWriter, r *http.Request) error {
	return s.stream(w, r, "portforward")
}

// stream serves an exec, attach or port-forward session through the CRI
// streaming server (agent/streaming, shared with the kubelet server). Who
// may: whoever reached the handler, i.e. root on the unix socket or the
// holder of the admin certificate on TCP (boundary.go); a session is root
// in the pod, no more than the rest of this API already allows.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, kind string) error {
	if !httpstream.IsUpgradeRequest(r) {
		return apierrors.NewBadRequest(fmt.Sprintf("%s needs a connection upgrade (SPDY/3.1 or WebSocket): use kubectl %s", kind, strings.ReplaceAll(kind, "portforward", "port-forward")))
	}
	if s.opts.Streams == nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("%s sessions are not served by this API (no runtime streaming)", kind))
	}
	pod, err := s.backend.GetPod(r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return err
	}
	p := &streaming.Proxy{Runtime: s.opts.Streams, Logger: s.logger, WriteError: s.writeError}
	if kind == "portforward" {
		p.PortForward(w, r, pod)
		return nil
	}
	container, err := containerFor(pod, r.URL.Query().Get("container"))
	if err != nil {
		return err
	}
	if kind == "exec" {
		p.Exec(w, r, pod, container)
	} else {
		p.Attach(w, r, pod, container)
	}
	return nil
}

func (s *Server) podDetails(w http.ResponseWriter, r *http.Request) error {
	d, err := s.backend.Details(r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	name := ""
	if v := r.URL.Query().Get("fieldSelector"); v != "" {
		sel, err := fields.ParseSelector(v)
		if err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("fieldSelector: %v", err))
		}
		name, _ = sel.RequiresExactMatch("involvedObject.name")
	}
	if name != "" && ns == "" {
		return apierrors.NewBadRequest("an involvedObject.name selector needs a namespace: use /api/v1/namespaces/{ns}/events")
	}
	watching, err := queryBool(r, "watch")
	if err != nil {
		return err
	}
	if watching {
		return s.watchEvents(w, r, ns, name)
	}
	items, err := s.events(ns, name)
	if err != nil {
		return err
	}
	list := v1.EventList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "EventList"}, Items: items}
	// A watch from this version sends what changes after it
	// (watch_events.go).
	list.ResourceVersion = eventsResourceVersion
	if t, ok := wantTable(r); ok {
		tab := eventTable(list.Items, t)
		tab.ResourceVersion = eventsResourceVersion
		writeJSON(w, http.StatusOK, tab)
		return nil
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

// events returns the events of the pod ns/name, or of every pod of ns ("":
// all) when name is "".
func (s *Server) events(ns, name string) ([]v1.Event, error) {
	items := []v1.Event{}
	if name != "" {
		evs, err := s.backend.Events(ns, name)
		if err != nil {
			return nil, err
		}
		return append(items, evs...), nil
	}
	for _, p := range s.backend.ListPods(ns) {
		evs, err := s.backend.Events(p.Namespace, p.Name)
		if apierrors.IsNotFound(err) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		items = append(items, evs...)
	}
	return items, nil
}

// check serves /healthz or /readyz: 200 "ok", or 503 with the error.
func (s *Server) check(f func() error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := f(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, err.Error())
			return nil
		}
		fmt.Fprintln(w, "ok")
		return nil
	}
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) error {
	var buf bytes.Buffer
	if err := s.backend.WriteMetrics(&buf); err != nil {
		return fmt.Errorf("write metrics: %w", err)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
	return nil
}

// refuseDryRun refuses a write that asks for a dry run (kubectl
// --dry-run=server sends dryRun=All): the node has no dry-run path, and
// ignoring the parameter would really create, change or delete what the
// caller only meant to try.
func refuseDryRun(r *http.Request) error {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return nil
	}
	if !r.URL.Query().Has("dryRun") {
		return nil
	}
	return apierrors.NewBadRequest("dryRun is not supported by this node, so nothing was changed: drop --dry-run=server (kubectl --dry-run=client and kubectl diff need no server support)")
}
