package certificate

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// A node with only a bootstrap kubeconfig requests the kubelet's client
// certificate: one CSR for kubernetes.io/kube-apiserver-client-kubelet
// with CN system:node:<node>, O system:nodes, usages digital signature and
// client auth, an ECDSA P-256 key, named node-csr-<digest>; once issued,
// the pair is kubelet-client-<ts>.pem (0600) behind the symlink
// kubelet-client-current.pem and the kubeconfig (0600) points at it with
// the bootstrap kubeconfig's server and CA. A second start finds it valid
// and requests nothing.
func TestBootstrap_RequestsTheKubeletsClientCertificate(t *testing.T) {
	ca := newTestCA(t)
	cs := fakeCSRs()
	(&controller{lifetime: time.Hour}).run(t, cs, ca)
	c := bootstrapConfig(t, cs, ca)
	did, err := Bootstrap(context.Background(), c)
	require.NoError(t, err)
	require.True(t, did)

	list, err := cs.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	csr := list.Items[0]
	require.Regexp(t, regexp.MustCompile(`^node-csr-[A-Za-z0-9_-]{43}$`), csr.Name)
	require.Equal(t, "kubernetes.io/kube-apiserver-client-kubelet", csr.Spec.SignerName)
	require.Equal(t, []certificatesv1.KeyUsage{"digital signature", "client auth"}, csr.Spec.Usages)
	block, _ := pem.Decode(csr.Spec.Request)
	require.Equal(t, "CERTIFICATE REQUEST", block.Type)
	cr, err := x509.ParseCertificateRequest(block.Bytes)
	require.NoError(t, err)
	require.Equal(t, "system:node:worker-1", cr.Subject.CommonName)
	require.Equal(t, []string{"system:nodes"}, cr.Subject.Organization)
	require.Empty(t, cr.DNSNames)
	require.Empty(t, cr.IPAddresses)
	pub, ok := cr.PublicKey.(*ecdsa.PublicKey)
	require.True(t, ok, "%T", cr.PublicKey)
	require.Equal(t, elliptic.P256(), pub.Curve)

	current := filepath.Join(c.CertDir, "kubelet-client-current.pem")
	target, err := os.Readlink(current)
	require.NoError(t, err, "kubelet-client-current.pem is a symlink")
	require.Regexp(t, `/kubelet-client-\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}\.pem$`, target)
	fi, err := os.Stat(target)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	pair, err := os.ReadFile(current)
	require.NoError(t, err)
	cert, err := parsePair(pair, pair)
	require.NoError(t, err)
	require.Equal(t, "system:node:worker-1", cert.Leaf.Subject.CommonName)
	_, err = os.Stat(filepath.Join(c.CertDir, bootstrapKeyFile))
	require.True(t, os.IsNotExist(err), "the cached key is removed once issued: %v", err)
	entries, err := os.ReadDir(c.CertDir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "the pair and its symlink, no temporary files: %v", entries)

	fi, err = os.Stat(c.Kubeconfig)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	kc, err := clientcmd.LoadFromFile(c.Kubeconfig)
	require.NoError(t, err)
	auth := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo]
	require.Equal(t, current, auth.ClientCertificate)
	require.Equal(t, current, auth.ClientKey)
	require.Empty(t, auth.Token, "the bootstrap token is not copied")
	cl := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
	require.Equal(t, "https://192.0.2.1:6443", cl.Server)
	require.Equal(t, ca.pem, cl.CertificateAuthorityData)
	ok, why := KubeconfigValid(c.Kubeconfig, time.Now())
	require.True(t, ok, why)

	did, err = Bootstrap(context.Background(), c)
	require.NoError(t, err)
	require.False(t, did, "a valid kubeconfig needs no new certificate")
	list, _ = cs.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	require.Len(t, list.Items, 1)
}

// A denied request is an error that says why and what to do.
func TestBootstrap_DeniedSaysWhatToDo(t *testing.T) {
	ca := newTestCA(t)
	cs := fakeCSRs()
	(&controller{deny: true}).run(t, cs, ca)
	c := bootstrapConfig(t, cs, ca)
	_, err := Bootstrap(context.Background(), c)
	require.Error(t, err)
	require.Regexp(t, `certificate signing request node-csr-\S+ was denied \(reason "NotMyNode", message "not a node of this cluster"\)`, err.Error())
	require.ErrorContains(t, err, "kubectl delete csr node-csr-")
	_, serr := os.Stat(c.Kubeconfig)
	require.True(t, os.IsNotExist(serr), "no kubeconfig is written")
}

// Nobody approves: the wait ends with an error naming the request and the
// ways to approve it; a restart with the same cert dir waits for that same
// request (the cached key), and issues once it is approved.
func TestBootstrap_TimeoutThenRestartReusesTheRequest(t *testing.T) {
	ca := newTestCA(t)
	cs := fakeCSRs()
	c := bootstrapConfig(t, cs, ca)
	c.Wait.Timeout = 300 * time.Millisecond
	_, err := Bootstrap(context.Background(), c)
	require.Error(t, err)
	require.Regexp(t, `certificate signing request (node-csr-\S+) \(signer kubernetes.io/kube-apiserver-client-kubelet\) is not approved after`, err.Error())
	name := regexp.MustCompile(`node-csr-[A-Za-z0-9_-]+`).FindString(err.Error())
	require.ErrorContains(t, err, "approve it: kubectl certificate approve "+name)
	require.ErrorContains(t, err, "csrapproving controller")
	fi, serr := os.Stat(filepath.Join(c.CertDir, bootstrapKeyFile))
	require.NoError(t, serr, "the key is kept for the next start")
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	ctl := &controller{lifetime: time.Hour}
	ctl.run(t, cs, ca)
	c.Wait.Timeout = 20 * time.Second
	did, err := Bootstrap(context.Background(), c)
	require.NoError(t, err)
	require.True(t, did)
	list, _ := cs.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	require.Len(t, list.Items, 1, "the pending request was reused")
	require.Equal(t, name, list.Items[0].Name)
}

// An expired client certificate in the kubeconfig is bootstrapped again.
func TestBootstrap_ExpiredKubeconfigBootstrapsAgain(t *testing.T) {
	ca := newTestCA(t)
	cs := fakeCSRs()
	(&controller{lifetime: time.Hour}).run(t, cs, ca)
	c := bootstrapConfig(t, cs, ca)
	certPEM, keyPEM := ca.pair(t, NodeSubject("worker-1"), time.Now().Add(-2*time.Hour), time.Hour)
	dir := filepath.Dir(c.Kubeconfig)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "old.pem"), append(certPEM, keyPEM...), 0o600))
	require.NoError(t, writeKubeconfig(c.Kubeconfig, mustConfig(t, c.BootstrapKubeconfig), filepath.Join(dir, "old.pem")))
	ok, why := KubeconfigValid(c.Kubeconfig, time.Now())
	require.False(t, ok)
	require.Contains(t, why, "the client certificate expired at")

	did, err := Bootstrap(context.Background(), c)
	require.NoError(t, err)
	require.True(t, did)
	ok, why = KubeconfigValid(c.Kubeconfig, time.Now())
	require.True(t, ok, why)
}

// A request of the bootstrap name made for another key is not waited for.
func TestBootstrap_ForeignRequestOfTheSameNameIsRefused(t *testing.T) {
	ca := newTestCA(t)
	cs := fakeCSRs()
	c := bootstrapConfig(t, cs, ca)
	require.NoError(t, os.MkdirAll(c.CertDir, 0o755))
	key, keyPEM, err := newKey()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(c.CertDir, bootstrapKeyFile), keyPEM, 0o600))
	name, err := digestedName(key.Public(), NodeSubject("worker-1"), ClientUsages)
	require.NoError(t, err)
	other, _, err := newKey()
	require.NoError(t, err)
	foreign, err := makeCSR(other, pkix.Name{CommonName: "system:node:worker-1", Organization: []string{"system:nodes"}}, nil)
	require.NoError(t, err)
	_, err = cs.CertificatesV1().CertificateSigningRequests().Create(context.Background(), &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       certificatesv1.CertificateSigningRequestSpec{Request: foreign, SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName, Usages: ClientUsages},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = Bootstrap(context.Background(), c)
	require.ErrorContains(t, err, "exists for another request (another key): delete it (kubectl delete csr "+name+")")
}
