package cluster

import (
	"context"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// CSRClient is the part of client-go's certificates.k8s.io/v1
// CertificateSigningRequestInterface that TLS bootstrapping and
// certificate rotation use (agent/certificate declares the same methods;
// client-go's fake clientset satisfies both).
type CSRClient interface {
	Create(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, opts metav1.CreateOptions) (*certificatesv1.CertificateSigningRequest, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*certificatesv1.CertificateSigningRequest, error)
	List(ctx context.Context, opts metav1.ListOptions) (*certificatesv1.CertificateSigningRequestList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// NewCSRClient is a CertificateSigningRequest client over cfg (the
// bootstrap kubeconfig's credentials, or the node's own for a renewal),
// with the typed client of the node's other resources rather than
// client-go's certificates clientset, which links the full clientset
// (issue #8; client-go's util/certificate Manager alone added 21.7 MB to
// the binary, 46.7 -> 68.4 MB).
func NewCSRClient(cfg *rest.Config, userAgent string) (CSRClient, error) {
	rc, err := certificatesRESTClient(cfg, userAgent) // podcert.go
	if err != nil {
		return nil, err
	}
	return &typedResource[*certificatesv1.CertificateSigningRequest, *certificatesv1.CertificateSigningRequestList]{
		client: rc, name: "certificatesigningrequests",
		newObject: func() *certificatesv1.CertificateSigningRequest { return &certificatesv1.CertificateSigningRequest{} },
		newList: func() *certificatesv1.CertificateSigningRequestList {
			return &certificatesv1.CertificateSigningRequestList{}
		},
	}, nil
}
