package cluster

// Pod certificates for the node's pods: the PodCertificateRequests
// (certificates.k8s.io/v1, GA in Kubernetes 1.37) the kubelet's pod
// certificate manager creates, with the pod's service account and the
// node named by UID, as the NodeRestriction admission plugin checks them.
// The key, the state of each request and the files are agent/volume's
// (podcert.go): this side only creates and reads the requests.

import (
	"context"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/minikubelet/minikubelet/agent/volume"
)

// PodCertificateRequestClient is the part of client-go's
// certificates.k8s.io/v1 PodCertificateRequestInterface the node uses
// (client-go's fake clientset satisfies it).
type PodCertificateRequestClient interface {
	Create(ctx context.Context, req *certificatesv1.PodCertificateRequest, opts metav1.CreateOptions) (*certificatesv1.PodCertificateRequest, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*certificatesv1.PodCertificateRequest, error)
}

// PodCertificateSource creates and reads the node's PodCertificateRequests;
// it is the agent's Deps.PodCertificates in cluster mode.
type PodCertificateSource struct {
	nodeName string
	// requests is the client of a namespace's requests.
	requests func(namespace string) PodCertificateRequestClient
	// serviceAccount reads a pod's service account (its UID goes into
	// the request; the Node authorizer lets a node get those of its pods).
	serviceAccount func(ctx context.Context, namespace, name string) (*v1.ServiceAccount, error)
	// nodes reads the node's own Node (its UID goes into the request).
	nodes NodeClient
}

var _ volume.PodCertificateIssuer = (*PodCertificateSource)(nil)

// NewPodCertificateSource returns the pod certificate source of api, which
// must be the client NewClient returned, for node nodeName; cfg is the
// node's configuration, for the certificates.k8s.io/v1 client.
func NewPodCertificateSource(api API, cfg *rest.Config, userAgent, nodeName string) (*PodCertificateSource, error) {
	ra, ok := api.(*restAPI)
	if !ok {
		return nil, fmt.Errorf("pod certificate requests need the API server client NewClient returns, not a %T", api)
	}
	rc, err := certificatesRESTClient(cfg, userAgent)
	if err != nil {
		return nil, err
	}
	return &PodCertificateSource{
		nodeName: nodeName,
		requests: func(ns string) PodCertificateRequestClient {
			return &typedResource[*certificatesv1.PodCertificateRequest, *certificatesv1.PodCertificateRequestList]{
				client: rc, name: "podcertificaterequests", namespace: ns,
				newObject: func() *certificatesv1.PodCertificateRequest { return &certificatesv1.PodCertificateRequest{} },
				newList:   func() *certificatesv1.PodCertificateRequestList { return &certificatesv1.PodCertificateRequestList{} },
			}
		},
		serviceAccount: func(ctx context.Context, ns, name string) (*v1.ServiceAccount, error) {
			sa := &v1.ServiceAccount{}
			err := ra.core.Get().Namespace(ns).Resource("serviceaccounts").Name(name).Do(ctx).Into(sa)
			return sa, err
		},
		nodes: api.Nodes(),
	}, nil
}

// CreatePodCertificateRequest implements volume.PodCertificateIssuer: the
// kubelet's request (generateName req-, owned by the pod), naming the pod,
// its service account and this node with their UIDs.
func (s *PodCertificateSource) CreatePodCertificateRequest(ctx context.Context, pod *v1.Pod, src *v1.PodCertificateProjection, pkcs10 []byte) (string, time.Time, error) {
	sa, err := s.serviceAccount(ctx, pod.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return "", time.Time{}, podCertError(fmt.Errorf("get service account %s/%s: %w", pod.Namespace, pod.Spec.ServiceAccountName, err))
	}
	node, err := s.nodes.Get(ctx, s.nodeName, metav1.GetOptions{})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("get Node %s: %w", s.nodeName, err)
	}
	req := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       pod.Namespace,
			GenerateName:    "req-",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}},
		},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName:                src.SignerName,
			PodName:                   pod.Name,
			PodUID:                    pod.UID,
			ServiceAccountName:        pod.Spec.ServiceAccountName,
			ServiceAccountUID:         sa.UID,
			NodeName:                  types.NodeName(s.nodeName),
			NodeUID:                   node.UID,
			MaxExpirationSeconds:      src.MaxExpirationSeconds,
			StubPKCS10Request:         pkcs10,
			UnverifiedUserAnnotations: src.UserAnnotations,
		},
	}
	out, err := s.requests(pod.Namespace).Create(ctx, req, metav1.CreateOptions{})
	if err != nil {
		return "", time.Time{}, podCertError(err)
	}
	created := out.CreationTimestamp.Time
	if created.IsZero() {
		created = time.Now() // a fake clientset sets none
	}
	return out.Name, created, nil
}

// PodCertificateRequest implements volume.PodCertificateIssuer; a missing
// request Is volume.ErrConfigNotFound.
func (s *PodCertificateSource) PodCertificateRequest(ctx context.Context, namespace, name string) (*certificatesv1.PodCertificateRequest, error) {
	pcr, err := s.requests(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%v: %w", err, volume.ErrConfigNotFound)
	}
	return pcr, err
}

// podCertError adds to a refused request what to check.
func podCertError(err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%w; the node's credentials need the Node authorizer and NodeRestriction (--authorization-mode=Node,RBAC, user system:node:<node name> in group system:nodes), "+
			"which let a node request certificates for the pods bound to it; a new pod may be refused for a moment until the authorizer has seen it", err)
	}
	return err
}

// certificatesRESTClient is a certificates.k8s.io/v1 REST client over cfg
// with the node's rate limits and protobuf.
func certificatesRESTClient(cfg *rest.Config, userAgent string) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.UserAgent = userAgent
	if c.QPS == 0 {
		c.QPS, c.Burst = clientQPS, clientBurst
	}
	if c.RateLimiter == nil {
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	gv := certificatesv1.SchemeGroupVersion
	c.GroupVersion, c.APIPath = &gv, "/apis"
	c.ContentType = "application/vnd.kubernetes.protobuf"
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	c.NegotiatedSerializer = nodeScheme().serializer()
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("certificates.k8s.io/v1 client: %w", err)
	}
	return rc, nil
}
