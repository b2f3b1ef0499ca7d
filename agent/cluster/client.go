package cluster

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
)

// API is what the node uses of the API server.
//
// It is a narrow stand-in for client-go's kubernetes.Interface: linking the
// full clientset (every API group's typed client, its scheme, the informer
// factory and listers) doubled the binary and the daemon's idle RSS (issue
// #8). NewClient builds it from small typed clients (typedResource) over
// client-go REST clients whose scheme knows core/v1,
// coordination.k8s.io/v1 and meta only; tests adapt client-go's fake
// clientset to it (clustertest.FromClientset), whose typed clients satisfy
// every XClient below as they are.
type API interface {
	Pods(namespace string) PodClient
	Nodes() NodeClient
	Leases(namespace string) LeaseClient
	ConfigMaps(namespace string) ConfigMapClient
	Secrets(namespace string) SecretClient
	Services(namespace string) ServiceClient
	Events(namespace string) EventClient
}

// PodClient is the part of client-go's PodInterface the node uses (the
// API server source, status patches, deletion, mirror pods).
type PodClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1.Pod, error)
	List(ctx context.Context, opts metav1.ListOptions) (*v1.PodList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Create(ctx context.Context, pod *v1.Pod, opts metav1.CreateOptions) (*v1.Pod, error)
	Update(ctx context.Context, pod *v1.Pod, opts metav1.UpdateOptions) (*v1.Pod, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (result *v1.Pod, err error)
}

// NodeClient is the part of client-go's NodeInterface the node uses: its
// own Node object (registration, status patches; List and Watch for an
// informer on metadata.name).
type NodeClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1.Node, error)
	List(ctx context.Context, opts metav1.ListOptions) (*v1.NodeList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Create(ctx context.Context, node *v1.Node, opts metav1.CreateOptions) (*v1.Node, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (result *v1.Node, err error)
}

// LeaseClient is the part of client-go's LeaseInterface the node's
// heartbeat uses.
type LeaseClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
}

// ConfigMapClient is the part of client-go's ConfigMapInterface the node
// uses: reading the ConfigMaps its pods reference (the Node authorizer
// allows get, and list/watch by metadata.name).
type ConfigMapClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1.ConfigMap, error)
	List(ctx context.Context, opts metav1.ListOptions) (*v1.ConfigMapList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// SecretClient is the part of client-go's SecretInterface the node uses,
// as ConfigMapClient.
type SecretClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1.Secret, error)
	List(ctx context.Context, opts metav1.ListOptions) (*v1.SecretList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// ServiceClient is the part of client-go's ServiceInterface the node uses:
// list and watch for the service link variables (the Node authorizer
// allows both on every namespace).
type ServiceClient interface {
	List(ctx context.Context, opts metav1.ListOptions) (*v1.ServiceList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// EventClient is the part of client-go's core/v1 EventInterface the node's
// event recorder uses (the kubelet's EventSink: create, and patch to fold
// a repeat into an existing event).
type EventClient interface {
	Create(ctx context.Context, event *v1.Event, opts metav1.CreateOptions) (*v1.Event, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (result *v1.Event, err error)
}

// The kubelet's client settings (kubeAPIQPS 50, kubeAPIBurst 100, and
// protobuf on the wire).
const (
	clientQPS   = 50
	clientBurst = 100
)

// NewClient builds the API server client from a kubeconfig file (its
// current context): LoadConfig, then NewClientForConfig. userAgent names
// the agent in the API server's logs and audit.
func NewClient(kubeconfig, userAgent string) (API, *rest.Config, error) {
	cfg, err := LoadConfig(kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	api, err := NewClientForConfig(cfg, userAgent)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return api, cfg, nil
}

// LoadConfig reads a kubeconfig file (its current context). The file must
// hold credentials the API server knows the node by: a client certificate
// (CN system:node:<name>, O system:nodes), a bearer token, or an exec
// plugin. A bootstrap token's kubeconfig is serve's --bootstrap-kubeconfig
// (agent/certificate), not this one.
func LoadConfig(kubeconfig string) (*rest.Config, error) {
	if _, err := os.Stat(kubeconfig); err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	if !hasCredentials(cfg) {
		return nil, fmt.Errorf("kubeconfig %s: its current context has no credentials: give the node a client certificate (CN system:node:<node name>, O system:nodes) or a bearer token, or get one with --bootstrap-kubeconfig (TLS bootstrapping)", kubeconfig)
	}
	return cfg, nil
}

// NewClientForConfig builds the API server client over cfg (LoadConfig's,
// possibly with a transport that rotates the client certificate), with the
// kubelet's rate limits and protobuf; cfg is set up in place.
func NewClientForConfig(cfg *rest.Config, userAgent string) (API, error) {
	cfg.UserAgent = userAgent
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return newRESTAPI(cfg)
}

// nodeScheme knows the types the node reads and writes (core/v1,
// coordination.k8s.io/v1, authentication.k8s.io/v1's TokenRequest,
// certificates.k8s.io/v1's CertificateSigningRequest) and meta's (Status, WatchEvent, list and get
// options): all its REST clients decode, nothing else.
//
// Built at the first use rather than at package init: only a node that
// joins a cluster needs it, and building it was the largest init of
// minikubelet's own packages (0.5 ms of every command's start, a
// foreground run's included; GODEBUG=inittrace=1).
var nodeScheme = sync.OnceValue(func() *schemeSet {
	s := &schemeSet{scheme: runtime.NewScheme()}
	metav1.AddToGroupVersion(s.scheme, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(v1.AddToScheme(s.scheme))
	utilruntime.Must(coordinationv1.AddToScheme(s.scheme))
	utilruntime.Must(authenticationv1.AddToScheme(s.scheme))
	utilruntime.Must(certificatesv1.AddToScheme(s.scheme))
	s.codecs = serializer.NewCodecFactory(s.scheme)
	s.params = runtime.NewParameterCodec(s.scheme)
	return s
})

// schemeSet is the scheme with its codec factory and parameter codec.
type schemeSet struct {
	scheme *runtime.Scheme
	codecs serializer.CodecFactory
	params runtime.ParameterCodec
}

// serializer is the REST clients' negotiated serializer.
func (s *schemeSet) serializer() runtime.NegotiatedSerializer {
	return rest.CodecFactoryForGeneratedClient(s.scheme, s.codecs).WithoutConversion()
}

// restAPI is API over the API server: one REST client per API group,
// sharing one HTTP client (connections) and one rate limiter (cfg's QPS
// for the whole node, as the clientset does).
type restAPI struct {
	core, coordination rest.Interface
	// tokens is core/v1 as JSON, for TokenRequest (TokenSource): its
	// body is another group's type, which client-go's typed CreateToken
	// also sends on the core client.
	tokens rest.Interface
}

func newRESTAPI(cfg *rest.Config) (*restAPI, error) {
	base := rest.CopyConfig(cfg)
	if base.RateLimiter == nil && base.QPS > 0 {
		base.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(base.QPS, base.Burst)
	}
	httpClient, err := rest.HTTPClientFor(base)
	if err != nil {
		return nil, err
	}
	group := func(gv schema.GroupVersion, apiPath string, json bool) (rest.Interface, error) {
		c := rest.CopyConfig(base)
		c.GroupVersion, c.APIPath = &gv, apiPath
		if json {
			c.ContentType, c.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
		}
		c.NegotiatedSerializer = nodeScheme().serializer()
		return rest.RESTClientForConfigAndClient(c, httpClient)
	}
	core, err := group(v1.SchemeGroupVersion, "/api", false)
	if err != nil {
		return nil, err
	}
	coordination, err := group(coordinationv1.SchemeGroupVersion, "/apis", false)
	if err != nil {
		return nil, err
	}
	tokens, err := group(v1.SchemeGroupVersion, "/api", true)
	if err != nil {
		return nil, err
	}
	return &restAPI{core: core, coordination: coordination, tokens: tokens}, nil
}

func (a *restAPI) Pods(namespace string) PodClient {
	return &typedResource[*v1.Pod, *v1.PodList]{client: a.core, name: "pods", namespace: namespace,
		newObject: func() *v1.Pod { return &v1.Pod{} }, newList: func() *v1.PodList { return &v1.PodList{} }}
}

func (a *restAPI) Nodes() NodeClient {
	return &typedResource[*v1.Node, *v1.NodeList]{client: a.core, name: "nodes",
		newObject: func() *v1.Node { return &v1.Node{} }, newList: func() *v1.NodeList { return &v1.NodeList{} }}
}

func (a *restAPI) Leases(namespace string) LeaseClient {
	return &typedResource[*coordinationv1.Lease, *coordinationv1.LeaseList]{client: a.coordination, name: "leases", namespace: namespace,
		newObject: func() *coordinationv1.Lease { return &coordinationv1.Lease{} }, newList: func() *coordinationv1.LeaseList { return &coordinationv1.LeaseList{} }}
}

func (a *restAPI) ConfigMaps(namespace string) ConfigMapClient {
	return &typedResource[*v1.ConfigMap, *v1.ConfigMapList]{client: a.core, name: "configmaps", namespace: namespace,
		newObject: func() *v1.ConfigMap { return &v1.ConfigMap{} }, newList: func() *v1.ConfigMapList { return &v1.ConfigMapList{} }}
}

func (a *restAPI) Secrets(namespace string) SecretClient {
	return &typedResource[*v1.Secret, *v1.SecretList]{client: a.core, name: "secrets", namespace: namespace,
		newObject: func() *v1.Secret { return &v1.Secret{} }, newList: func() *v1.SecretList { return &v1.SecretList{} }}
}

func (a *restAPI) Services(namespace string) ServiceClient {
	return &typedResource[*v1.Service, *v1.ServiceList]{client: a.core, name: "services", namespace: namespace,
		newObject: func() *v1.Service { return &v1.Service{} }, newList: func() *v1.ServiceList { return &v1.ServiceList{} }}
}

func (a *restAPI) Events(namespace string) EventClient {
	return &typedResource[*v1.Event, *v1.EventList]{client: a.core, name: "events", namespace: namespace,
		newObject: func() *v1.Event { return &v1.Event{} }, newList: func() *v1.EventList { return &v1.EventList{} }}
}

// hasCredentials reports whether cfg authenticates at all.
func hasCredentials(cfg *rest.Config) bool {
	return (cfg.CertFile != "" || len(cfg.CertData) > 0) ||
		cfg.BearerToken != "" || cfg.BearerTokenFile != "" ||
		cfg.ExecProvider != nil || cfg.AuthProvider != nil ||
		cfg.Username != ""
}

// CheckNodeIdentity compares the kubeconfig's client certificate with the
// node name: an API server with the Node authorizer and NodeRestriction
// (every kubeadm cluster) lets system:node:<X> write only the Node named X,
// so a mismatch would fail every request. A certificate that names no node
// (or a token) is not checked: the API server decides.
func CheckNodeIdentity(cfg *rest.Config, nodeName string) error {
	data := cfg.CertData
	if len(data) == 0 && cfg.CertFile != "" {
		var err error
		if data, err = os.ReadFile(cfg.CertFile); err != nil {
			return fmt.Errorf("kubeconfig client certificate: %w", err)
		}
	}
	if len(data) == 0 {
		return nil
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return errors.New("kubeconfig client certificate: not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Errorf("kubeconfig client certificate: %w", err)
	}
	certNode, ok := strings.CutPrefix(cert.Subject.CommonName, nodeUserPrefix)
	if ok && certNode != nodeName {
		return fmt.Errorf("the kubeconfig's client certificate is node %q's (CN %s), but this node is named %q: the API server would refuse every write; use --node-name %s or that node's kubeconfig",
			certNode, cert.Subject.CommonName, nodeName, certNode)
	}
	return nil
}

// nodeUserPrefix starts the user name of a node's credentials.
const nodeUserPrefix = "system:node:"
