package api

// This file is the Go client of the API, used by the CLI (get, describe,
// logs, exec, delete) and by `run` when a daemon is up.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// DefaultSocket is where the daemon serves the API.
const DefaultSocket = "/run/minikubelet/minikubelet.sock"

// Connection failures, checked with errors.Is; the error text says what
// to do.
var (
	// ErrDaemonNotRunning: nothing listens on the socket.
	ErrDaemonNotRunning = errors.New("the minikubelet daemon is not running")
	// ErrSocketPermission: the socket exists but this user may not use it.
	ErrSocketPermission = errors.New("permission denied on the minikubelet API socket")
)

// Client calls the API over its unix socket. API errors are returned as
// *apierrors.StatusError, so apierrors.IsNotFound and friends work.
type Client struct {
	socket string
	hc     *http.Client
}

// NewClient returns a client of the daemon serving on the unix socket path.
func NewClient(socket string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConns:    2,
		IdleConnTimeout: 30 * time.Second,
	}
	return &Client{socket: socket, hc: &http.Client{Transport: tr}}
}

// Socket returns the socket path the client dials.
func (c *Client) Socket() string { return c.socket }

// connError explains a failure to reach the daemon.
func (c *Client) connError(err error) error {
	switch {
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%w (nothing answers on %s): start it with `minikubelet serve` (or hack/start-minikubelet.sh), or point --socket / MINIKUBELET_SOCKET at its socket", ErrDaemonNotRunning, c.socket)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("%w %s: run as root (the socket is 0600 root)", ErrSocketPermission, c.socket)
	}
	return fmt.Errorf("call the minikubelet daemon on %s: %w", c.socket, err)
}

// do sends a request and returns the response of a 2xx; any other status
// is decoded into a StatusError. The caller closes the body.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body []byte, contentType string) (*http.Response, error) {
	u := url.URL{Scheme: "http", Host: "minikubelet", Path: path, RawQuery: q.Encode()}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	// The server refuses a write without a JSON or YAML Content-Type
	// (CSRF defense): say JSON when the caller did not say otherwise.
	if contentType == "" && (body != nil || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch) {
		contentType = "application/json"
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, c.connError(err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, decodeError(resp)
}

// decodeError turns an error response into a StatusError.
func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var st metav1.Status
	if json.Unmarshal(b, &st) == nil && st.Kind == "Status" {
		if st.Code == 0 {
			st.Code = int32(resp.StatusCode)
		}
		return &apierrors.StatusError{ErrStatus: st}
	}
	msg := strings.TrimSpace(string(b))
	if msg == "" {
		msg = resp.Status
	}
	se := apierrors.NewGenericServerResponse(resp.StatusCode, resp.Request.Method, podsResource, "", msg, 0, true)
	se.ErrStatus.Message = msg
	return se
}

// call sends a request and decodes the JSON answer into v (nil: discard).
func (c *Client) call(ctx context.Context, method, path string, q url.Values, body []byte, contentType string, v any) error {
	resp, err := c.do(ctx, method, path, q, body, contentType)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if v == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("decode answer of %s %s: %w", method, path, err)
	}
	return nil
}

// podsPath is the collection path of a namespace ("" = all namespaces).
func podsPath(ns string) string {
	if ns == "" {
		return "/api/v1/pods"
	}
	return "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods"
}

// podPath is one pod's path, with an optional subresource.
func podPath(ns, name, sub string) string {
	p := podsPath(ns) + "/" + url.PathEscape(name)
	if sub != "" {
		p += "/" + sub
	}
	return p
}

// ListPods lists the pods of a namespace ("" = all namespaces).
func (c *Client) ListPods(ctx context.Context, ns string) (*v1.PodList, error) {
	var l v1.PodList
	if err := c.call(ctx, http.MethodGet, podsPath(ns), nil, nil, "", &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// GetPod returns one pod.
func (c *Client) GetPod(ctx context.Context, ns, name string) (*v1.Pod, error) {
	var p v1.Pod
	if err := c.call(ctx, http.MethodGet, podPath(ns, name, ""), nil, nil, "", &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// CreatePod submits a pod to the daemon, which persists and runs it.
func (c *Client) CreatePod(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	ns := pod.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	b, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("encode pod: %w", err)
	}
	var p v1.Pod
	if err := c.call(ctx, http.MethodPost, podsPath(ns), nil, b, "application/json", &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// DeletePod starts a pod's deletion (grace nil: the pod's own period).
func (c *Client) DeletePod(ctx context.Context, ns, name string, grace *int64) (*v1.Pod, error) {
	q := url.Values{}
	if grace != nil {
		q.Set("gracePeriodSeconds", strconv.FormatInt(*grace, 10))
	}
	var p v1.Pod
	if err := c.call(ctx, http.MethodDelete, podPath(ns, name, ""), q, nil, "", &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Events returns a pod's events, oldest first.
func (c *Client) Events(ctx context.Context, ns, name string) (*v1.EventList, error) {
	q := url.Values{"fieldSelector": {"involvedObject.name=" + name}}
	var l v1.EventList
	if err := c.call(ctx, http.MethodGet, "/api/v1/namespaces/"+url.PathEscape(ns)+"/events", q, nil, "", &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// Details returns describe's extra view of a pod.
func (c *Client) Details(ctx context.Context, ns, name string) (*PodDetails, error) {
	var d PodDetails
	if err := c.call(ctx, http.MethodGet, podPath(ns, name, "details"), nil, nil, "", &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// LogRequest selects a container's log, like kubectl logs' flags.
type LogRequest struct {
	Container    string
	Follow       bool
	Previous     bool
	Timestamps   bool
	TailLines    *int64
	SinceSeconds *int64
	// SinceTime, when not zero, is sent as sinceTime (RFC3339).
	SinceTime time.Time
	// LimitBytes, when set, is sent as limitBytes.
	LimitBytes *int64
}

// Logs opens a container's log; the caller reads it to EOF (with Follow,
// until the container exits or ctx ends) and closes it.
func (c *Client) Logs(ctx context.Context, ns, name string, r LogRequest) (io.ReadCloser, error) {
	q := url.Values{}
	if r.Container != "" {
		q.Set("container", r.Container)
	}
	for k, b := range map[string]bool{"follow": r.Follow, "previous": r.Previous, "timestamps": r.Timestamps} {
		if b {
			q.Set(k, "true")
		}
	}
	if r.TailLines != nil {
		q.Set("tailLines", strconv.FormatInt(*r.TailLines, 10))
	}
	if r.SinceSeconds != nil {
		q.Set("sinceSeconds", strconv.FormatInt(*r.SinceSeconds, 10))
	}
	if !r.SinceTime.IsZero() {
		q.Set("sinceTime", r.SinceTime.UTC().Format(time.RFC3339))
	}
	if r.LimitBytes != nil {
		q.Set("limitBytes", strconv.FormatInt(*r.LimitBytes, 10))
	}
	resp, err := c.do(ctx, http.MethodGet, podPath(ns, name, "log"), q, nil, "")
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Exec runs cmd in a container (container "": the pod's only one) and
// returns its output and exit code; timeout 0 leaves it to the daemon.
func (c *Client) Exec(ctx context.Context, ns, name, container string, cmd []string, timeout time.Duration) (*ExecResult, error) {
	q := url.Values{"command": cmd}
	if container != "" {
		q.Set("container", container)
	}
	if timeout > 0 {
		q.Set("timeout", timeout.String())
	}
	var res ExecResult
	if err := c.call(ctx, http.MethodPost, podPath(ns, name, "exec"), q, nil, "", &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Version returns the daemon's and its runtime's versions.
func (c *Client) Version(ctx context.Context) (*VersionInfo, error) {
	var v VersionInfo
	if err := c.call(ctx, http.MethodGet, "/version", nil, nil, "", &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// Ready returns nil when the daemon answers /readyz with 200, else the
// reason it gave.
func (c *Client) Ready(ctx context.Context) error {
	resp, err := c.do(ctx, http.MethodGet, "/readyz", nil, nil, "")
	if err != nil {
		var se *apierrors.StatusError
		if errors.As(err, &se) {
			return errors.New(strings.TrimSpace(se.ErrStatus.Message))
		}
		return err
	}
	resp.Body.Close()
	return nil
}

// configPath is the collection path of a resource ("configmaps",
// "secrets") in a namespace ("" = all namespaces), or with name one
// object's path.
func configPath(resource, ns, name string) string {
	if ns == "" {
		return "/api/v1/" + resource
	}
	p := "/api/v1/namespaces/" + url.PathEscape(ns) + "/" + resource
	if name != "" {
		p += "/" + url.PathEscape(name)
	}
	return p
}

// createObject POSTs obj to the collection of resource in ns (""
// = default) and decodes the created object into out.
func (c *Client) createObject(ctx context.Context, resource, ns string, obj, out any) error {
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encode %s: %w", resource, err)
	}
	return c.call(ctx, http.MethodPost, configPath(resource, ns, ""), nil, b, "application/json", out)
}

// CreateConfigMap submits a ConfigMap to the daemon, which persists it and
// hands it to the pods that refer to it.
func (c *Client) CreateConfigMap(ctx context.Context, cm *v1.ConfigMap) (*v1.ConfigMap, error) {
	var out v1.ConfigMap
	if err := c.createObject(ctx, "configmaps", cm.Namespace, cm, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateSecret submits a Secret to the daemon.
func (c *Client) CreateSecret(ctx context.Context, secret *v1.Secret) (*v1.Secret, error) {
	var out v1.Secret
	if err := c.createObject(ctx, "secrets", secret.Namespace, secret, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetConfigMap returns one ConfigMap.
func (c *Client) GetConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error) {
	var out v1.ConfigMap
	if err := c.call(ctx, http.MethodGet, configPath("configmaps", ns, name), nil, nil, "", &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetSecret returns one Secret, with its data.
func (c *Client) GetSecret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	var out v1.Secret
	if err := c.call(ctx, http.MethodGet, configPath("secrets", ns, name), nil, nil, "", &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListConfigMaps lists the ConfigMaps of a namespace ("" = all).
func (c *Client) ListConfigMaps(ctx context.Context, ns string) (*v1.ConfigMapList, error) {
	var l v1.ConfigMapList
	if err := c.call(ctx, http.MethodGet, configPath("configmaps", ns, ""), nil, nil, "", &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ListSecrets lists the Secrets of a namespace ("" = all).
func (c *Client) ListSecrets(ctx context.Context, ns string) (*v1.SecretList, error) {
	var l v1.SecretList
	if err := c.call(ctx, http.MethodGet, configPath("secrets", ns, ""), nil, nil, "", &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// DeleteConfigMap deletes a ConfigMap submitted through the API.
func (c *Client) DeleteConfigMap(ctx context.Context, ns, name string) error {
	return c.call(ctx, http.MethodDelete, configPath("configmaps", ns, name), nil, nil, "", nil)
}

// DeleteSecret deletes a Secret submitted through the API.
func (c *Client) DeleteSecret(ctx context.Context, ns, name string) error {
	return c.call(ctx, http.MethodDelete, configPath("secrets", ns, name), nil, nil, "", nil)
}

// WatchOptions selects what WatchPods sees.
type WatchOptions struct {
	// Name watches one pod (fieldSelector metadata.name).
	Name string
	// LabelSelector selects pods by label ("" = all).
	LabelSelector string
	// ResourceVersion: "" starts with an ADDED event for every current
	// pod; a list's or an event's version replays every change after it
	// (410 Gone when the daemon no longer can: list again).
	ResourceVersion string
	// TimeoutSeconds ends the watch on the daemon's side (0 = never).
	TimeoutSeconds int64
}

// WatchPods watches the pods of a namespace ("" = all namespaces): the
// result's channel gets an event per change, with *v1.Pod objects (a
// *metav1.Status for watch.Error), until Stop, ctx's end or the daemon
// ending the watch (the channel is closed then).
func (c *Client) WatchPods(ctx context.Context, ns string, o WatchOptions) (watch.Interface, error) {
	q := url.Values{"watch": {"true"}}
	if o.Name != "" {
		q.Set("fieldSelector", "metadata.name="+o.Name)
	}
	if o.LabelSelector != "" {
		q.Set("labelSelector", o.LabelSelector)
	}
	if o.ResourceVersion != "" {
		q.Set("resourceVersion", o.ResourceVersion)
	}
	if o.TimeoutSeconds > 0 {
		q.Set("timeoutSeconds", strconv.FormatInt(o.TimeoutSeconds, 10))
	}
	resp, err := c.do(ctx, http.MethodGet, podsPath(ns), q, nil, "")
	if err != nil {
		return nil, err
	}
	return watch.NewStreamWatcher(&podEventDecoder{body: resp.Body, dec: json.NewDecoder(resp.Body)}, streamErrors{}), nil
}

// podEventDecoder decodes a watch stream (watch.Decoder).
type podEventDecoder struct {
	body io.ReadCloser
	dec  *json.Decoder
}

func (d *podEventDecoder) Decode() (watch.EventType, runtime.Object, error) {
	var ev struct {
		Type   watch.EventType `json:"type"`
		Object json.RawMessage `json:"object"`
	}
	if err := d.dec.Decode(&ev); err != nil {
		return "", nil, err
	}
	var obj runtime.Object
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		obj = &v1.Pod{}
	case watch.Error:
		obj = &metav1.Status{}
	default:
		return "", nil, fmt.Errorf("watch event of unknown type %q", ev.Type)
	}
	if err := json.Unmarshal(ev.Object, obj); err != nil {
		return "", nil, fmt.Errorf("decode %s watch event: %w", ev.Type, err)
	}
	return ev.Type, obj, nil
}

func (d *podEventDecoder) Close() { d.body.Close() }

// streamErrors reports a broken watch stream as an ERROR event.
type streamErrors struct{}

func (streamErrors) AsObject(err error) runtime.Object {
	return &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
		Message: fmt.Sprintf("the watch stream broke: %v; watch again", err)}
}
