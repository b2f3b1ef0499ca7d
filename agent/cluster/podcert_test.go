package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/agent/volume"
)

// testPodCertificateSource is the source over a fake clientset.
func testPodCertificateSource(cs *fake.Clientset, node string) *PodCertificateSource {
	return &PodCertificateSource{
		nodeName: node,
		requests: func(ns string) PodCertificateRequestClient { return cs.CertificatesV1().PodCertificateRequests(ns) },
		serviceAccount: func(ctx context.Context, ns, name string) (*v1.ServiceAccount, error) {
			return cs.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		},
		nodes: cs.CoreV1().Nodes(),
	}
}

// TestPodCertificateSource_CreatesTheKubeletsRequest: the request names
// the pod, its service account and the node with their UIDs (what
// NodeRestriction checks), is owned by the pod, and carries the stub
// PKCS#10 request and the projection's signer, lifetime and annotations.
func TestPodCertificateSource_CreatesTheKubeletsRequest(t *testing.T) {
	cs := fake.NewClientset(
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}},
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns", UID: "sa-uid"}},
	)
	s := testPodCertificateSource(cs, "n1")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-uid"}, Spec: v1.PodSpec{ServiceAccountName: "app"}}
	src := &v1.PodCertificateProjection{SignerName: "example.com/id", KeyType: "ECDSAP256", MaxExpirationSeconds: ptr.To(int32(7200)),
		UserAnnotations: map[string]string{"example.com/role": "web"}}

	// The fake clientset does not generate names.
	cs.PrependReactor("create", "podcertificaterequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.PodCertificateRequest)
		obj.Name = obj.GenerateName + "abcde"
		return false, nil, nil
	})
	name, created, err := s.CreatePodCertificateRequest(context.Background(), pod, src, csr)
	require.NoError(t, err)
	assert.Equal(t, "req-abcde", name)
	assert.False(t, created.IsZero())

	got, err := s.PodCertificateRequest(context.Background(), "ns", name)
	require.NoError(t, err)
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "pod-uid"}}, got.OwnerReferences)
	assert.Equal(t, certificatesv1.PodCertificateRequestSpec{
		SignerName: "example.com/id", PodName: "p", PodUID: "pod-uid", ServiceAccountName: "app", ServiceAccountUID: "sa-uid",
		NodeName: "n1", NodeUID: "node-uid", MaxExpirationSeconds: ptr.To(int32(7200)), StubPKCS10Request: csr,
		UnverifiedUserAnnotations: map[string]string{"example.com/role": "web"},
	}, got.Spec)

	_, err = s.PodCertificateRequest(context.Background(), "ns", "req-gone")
	require.True(t, errors.Is(err, volume.ErrConfigNotFound), "%v", err)
}

// TestPodCertificateSource_ForbiddenSaysWhatToCheck: a refused request
// names the node authorizer setup.
func TestPodCertificateSource_ForbiddenSaysWhatToCheck(t *testing.T) {
	cs := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	cs.PrependReactor("get", "serviceaccounts", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "app", errors.New("no relationship found"))
	})
	s := testPodCertificateSource(cs, "n1")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{ServiceAccountName: "app"}}
	_, _, err := s.CreatePodCertificateRequest(context.Background(), pod, &v1.PodCertificateProjection{SignerName: "example.com/id"}, nil)
	require.ErrorContains(t, err, "get service account ns/app")
	require.ErrorContains(t, err, "--authorization-mode=Node,RBAC")
}
