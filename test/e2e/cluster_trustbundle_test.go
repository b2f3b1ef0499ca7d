package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// e2eCACert is a self-signed CA certificate named cn, PEM-encoded.
func e2eCACert(t *testing.T, cn string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// pemCommonNames is the common names of a PEM file's certificates, sorted;
// anything but certificates fails the test.
func pemCommonNames(t *testing.T, data string) []string {
	t.Helper()
	var cns []string
	rest := []byte(data)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		require.Equal(t, "CERTIFICATE", b.Type)
		c, err := x509.ParseCertificate(b.Bytes)
		require.NoError(t, err)
		cns = append(cns, c.Subject.CommonName)
	}
	require.Empty(t, strings.TrimSpace(string(rest)), "only PEM certificates in %q", data)
	slices.Sort(cns)
	return cns
}

// TestCluster_ClusterTrustBundlesAreProjected runs `serve --kubeconfig`
// against a real kube-apiserver (v1.37: certificates.k8s.io/v1
// ClusterTrustBundles are GA and served without flags). The test creates
// ClusterTrustBundles, and a pod through the API server that projects one
// by name, a signer's bundles by label selector, and a missing optional
// one. Read from inside the container: each file holds the certificates
// of its bundles, each once (two of the signer's bundles share one), the other
// signer's bundle with the same labels is left out, the missing one is an
// empty file. A certificate added to the named bundle reaches the running
// pod's file. A pod of the local API that projects a bundle is refused at
// admission, saying why.
func TestCluster_ClusterTrustBundlesAreProjected(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-ctb"
	cp := controlplane.Start(t, node)
	r := newPrivateRuntime(t)
	d := r.newDaemon(t, nil, "--node-name", node, "--kubeconfig", cp.NodeKubeconfig(t, node))
	d.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), scaled(5*time.Minute))
	defer cancel()

	a, b, c, other, later := e2eCACert(t, "root-a"), e2eCACert(t, "root-b"), e2eCACert(t, "signer-c"), e2eCACert(t, "other-signer"), e2eCACert(t, "root-later")
	const signer = "example.com/mkl-e2e"
	labels := map[string]string{"mkl-e2e": "roots"}
	bundles := cp.Admin.CertificatesV1().ClusterTrustBundles()
	for _, ctb := range []*certificatesv1.ClusterTrustBundle{
		{ObjectMeta: metav1.ObjectMeta{Name: "mkl-e2e-roots"}, Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: a + b}},
		// The API server refuses a repeat within a bundle; across the
		// selected bundles, b repeats.
		{ObjectMeta: metav1.ObjectMeta{Name: "example.com:mkl-e2e:one", Labels: labels},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: c + b}},
		{ObjectMeta: metav1.ObjectMeta{Name: "example.com:mkl-e2e:two", Labels: labels},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: b}},
		{ObjectMeta: metav1.ObjectMeta{Name: "example.com:other:one", Labels: labels},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/other", TrustBundle: other}},
	} {
		_, err := bundles.Create(ctx, ctb, metav1.CreateOptions{})
		require.NoError(t, err, "create ClusterTrustBundle %s", ctb.Name)
	}

	one := int64(1)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ctb-user"},
		Spec: v1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &one,
			AutomountServiceAccountToken:  ptr.To(false),
			Volumes: []v1.Volume{{Name: "certs", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr.To("mkl-e2e-roots"), Path: "roots.pem"}},
				{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{SignerName: ptr.To(signer),
					LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, Path: "signer/bundle.pem"}},
				{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr.To("mkl-e2e-missing"), Optional: ptr.To(true), Path: "missing.pem"}},
			}}}}},
			Containers: []v1.Container{{
				Name: "c", Image: suite.registry + "/minikubelet/busybox:1.36",
				Command:      []string{"sleep", "3600"},
				VolumeMounts: []v1.VolumeMount{{Name: "certs", MountPath: "/etc/mkl-certs"}},
			}},
		},
	}
	_, err := cp.Admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			dctx, dcancel := shortCtx()
			defer dcancel()
			zero := int64(0)
			_ = cp.Admin.CoreV1().Pods("default").Delete(dctx, "ctb-user", metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
	})
	waitFor(t, "the pod with trust bundles to run", scaled(90*time.Second), func() string {
		p, err := serverPod(t, cp.Admin, "ctb-user")
		if err != nil || p == nil {
			return fmt.Sprintf("get: %v", err)
		}
		if !isRunning(p) {
			return podSummary(p)
		}
		return ""
	})

	exec := func(cmd ...string) string {
		t.Helper()
		ectx, ecancel := shortCtx()
		defer ecancel()
		res, err := d.api().Exec(ectx, "default", "ctb-user", "c", cmd, scaled(10*time.Second))
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode, "%v: %s", cmd, res.Stderr)
		return string(res.Stdout)
	}
	require.Equal(t, []string{"root-a", "root-b"}, pemCommonNames(t, exec("cat", "/etc/mkl-certs/roots.pem")), "the named bundle")
	require.Equal(t, []string{"root-b", "signer-c"}, pemCommonNames(t, exec("cat", "/etc/mkl-certs/signer/bundle.pem")),
		"the signer's bundles the selector matches, each certificate once, not the other signer's with the same labels")
	require.Equal(t, "0 644\n", exec("stat", "-L", "-c", "%s %a", "/etc/mkl-certs/missing.pem"), "a missing optional bundle is an empty file")

	// A certificate added to the bundle reaches the running pod (at its
	// next sync, within the minute's resync).
	named, err := bundles.Get(ctx, "mkl-e2e-roots", metav1.GetOptions{})
	require.NoError(t, err)
	named.Spec.TrustBundle += later
	_, err = bundles.Update(ctx, named, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitFor(t, "the changed bundle in the pod's file", scaled(150*time.Second), func() string {
		got := pemCommonNames(t, exec("cat", "/etc/mkl-certs/roots.pem"))
		if !slices.Equal(got, []string{"root-a", "root-b", "root-later"}) {
			return fmt.Sprintf("roots.pem has %v", got)
		}
		return ""
	})

	// A local pod may not read them: they are the cluster's objects.
	local := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "local-ctb", Namespace: "default"},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{{Name: "t", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{
				ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr.To("mkl-e2e-roots"), Path: "ca.pem"},
			}}}}}},
			Containers: []v1.Container{{Name: "c", Image: suite.registry + "/minikubelet/busybox:1.36", Command: []string{"sleep", "3600"}}},
		},
	}
	lctx, lcancel := shortCtx()
	_, err = d.api().CreatePod(lctx, local)
	lcancel()
	require.NoError(t, err)
	refused := d.waitPod(t, "local-ctb", "refused at admission", scaled(30*time.Second), func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodFailed
	})
	require.Equal(t, "ClusterProjectionUnavailable", refused.Status.Reason)
	require.Contains(t, refused.Status.Message, `only pods from the cluster's API server may read ClusterTrustBundles: this pod comes from the "api" source`)

	zero := int64(0)
	require.NoError(t, cp.Admin.CoreV1().Pods("default").Delete(ctx, "ctb-user", metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	d.waitPod(t, "ctb-user", "gone from the node", scaled(30*time.Second), func(p *v1.Pod) bool { return p == nil })
	require.Empty(t, removeLeftovers(ctx, t, r.rt, "ctb-user"), "ctb-user's sandbox and containers must be gone")
}

// TestCluster_PodCertificatesAreIssued runs `serve --kubeconfig` against a
// real kube-apiserver (v1.37: PodCertificateRequests are GA). A pod
// through the API server projects a podCertificate of signer
// example.com/mkl-e2e; the node creates the PodCertificateRequest with its
// own credentials (Node authorizer, NodeRestriction), and the test plays
// the signer: it checks the request names the pod, its service account
// and the node, and issues a certificate for the request's public key.
// From inside the container: the key file is the private key of the
// certificate in the chain file, the credential bundle is both, and the
// volume is a read-only tmpfs (the key is on no disk). A local pod that
// projects one is refused at admission.
func TestCluster_PodCertificatesAreIssued(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-podcert"
	cp := controlplane.Start(t, node)
	r := newPrivateRuntime(t)
	d := r.newDaemon(t, nil, "--node-name", node, "--kubeconfig", cp.NodeKubeconfig(t, node))
	d.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), scaled(4*time.Minute))
	defer cancel()

	const signer = "example.com/mkl-e2e"
	one := int64(1)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cert-user"},
		Spec: v1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &one,
			AutomountServiceAccountToken:  ptr.To(false),
			Volumes: []v1.Volume{{Name: "id", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{PodCertificate: &v1.PodCertificateProjection{SignerName: signer, KeyType: "ECDSAP256",
					CredentialBundlePath: "bundle.pem", KeyPath: "tls.key", CertificateChainPath: "tls.crt"}},
			}}}}},
			Containers: []v1.Container{{
				Name: "c", Image: suite.registry + "/minikubelet/busybox:1.36",
				Command:      []string{"sleep", "3600"},
				VolumeMounts: []v1.VolumeMount{{Name: "id", MountPath: "/var/run/mkl-id"}},
			}},
		},
	}
	created, err := cp.Admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			dctx, dcancel := shortCtx()
			defer dcancel()
			zero := int64(0)
			_ = cp.Admin.CoreV1().Pods("default").Delete(dctx, "cert-user", metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
	})

	// The signer's side: find the node's request and issue it.
	var pcr *certificatesv1.PodCertificateRequest
	waitFor(t, "the node's PodCertificateRequest", scaled(90*time.Second), func() string {
		list, err := cp.Admin.CertificatesV1().PodCertificateRequests("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		for i := range list.Items {
			if list.Items[i].Spec.PodUID == created.UID {
				pcr = &list.Items[i]
				return ""
			}
		}
		p, _ := serverPod(t, cp.Admin, "cert-user")
		return fmt.Sprintf("%d requests, none for the pod; pod: %s", len(list.Items), podSummary(p))
	})
	sa, err := cp.Admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
	require.NoError(t, err)
	nodeObj, err := cp.Admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, signer, pcr.Spec.SignerName)
	require.Equal(t, "cert-user", pcr.Spec.PodName)
	require.Equal(t, "default", pcr.Spec.ServiceAccountName)
	require.Equal(t, sa.UID, pcr.Spec.ServiceAccountUID)
	require.Equal(t, node, string(pcr.Spec.NodeName))
	require.Equal(t, nodeObj.UID, pcr.Spec.NodeUID)
	csr, err := x509.ParseCertificateRequest(pcr.Spec.StubPKCS10Request)
	require.NoError(t, err)
	require.NoError(t, csr.CheckSignature())

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Now().Truncate(time.Second)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mkl-e2e signer"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "cert-user"},
		NotBefore: now, NotAfter: now.Add(2 * time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, csr.PublicKey, caKey)
	require.NoError(t, err)
	chain := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER})) + string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	pcr.Status = certificatesv1.PodCertificateRequestStatus{
		Conditions: []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue,
			Reason: "Issued", Message: "issued by the e2e test", LastTransitionTime: metav1.NewTime(now)}},
		CertificateChain: chain,
		NotBefore:        ptr.To(metav1.NewTime(now)),
		BeginRefreshAt:   ptr.To(metav1.NewTime(now.Add(time.Hour))),
		NotAfter:         ptr.To(metav1.NewTime(now.Add(2 * time.Hour))),
	}
	_, err = cp.Admin.CertificatesV1().PodCertificateRequests("default").UpdateStatus(ctx, pcr, metav1.UpdateOptions{})
	require.NoError(t, err, "issue the certificate")

	waitFor(t, "the pod with its certificate to run", scaled(120*time.Second), func() string {
		p, err := serverPod(t, cp.Admin, "cert-user")
		if err != nil || p == nil {
			return fmt.Sprintf("get: %v", err)
		}
		if !isRunning(p) {
			return podSummary(p)
		}
		return ""
	})
	exec := func(cmd ...string) string {
		t.Helper()
		ectx, ecancel := shortCtx()
		defer ecancel()
		res, err := d.api().Exec(ectx, "default", "cert-user", "c", cmd, scaled(10*time.Second))
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode, "%v: %s", cmd, res.Stderr)
		return string(res.Stdout)
	}
	require.Equal(t, chain, exec("cat", "/var/run/mkl-id/tls.crt"))
	keyPEM := exec("cat", "/var/run/mkl-id/tls.key")
	kb, _ := pem.Decode([]byte(keyPEM))
	require.NotNil(t, kb, "a PEM key: %q", keyPEM)
	require.Equal(t, "PRIVATE KEY", kb.Type)
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(leafDER)
	require.NoError(t, err)
	require.True(t, key.(*ecdsa.PrivateKey).PublicKey.Equal(leaf.PublicKey), "the key the node generated is the certificate's")
	require.Equal(t, keyPEM+chain, exec("cat", "/var/run/mkl-id/bundle.pem"), "the credential bundle is the key, then the chain")
	require.Regexp(t, `(?m)^tmpfs /var/run/mkl-id tmpfs ro[, ]`, exec("cat", "/proc/mounts"), "the key lives on a read-only tmpfs")

	local := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "local-cert", Namespace: "default"},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{{Name: "t", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{
				PodCertificate: &v1.PodCertificateProjection{SignerName: signer, KeyType: "ECDSAP256", KeyPath: "k"},
			}}}}}},
			Containers: []v1.Container{{Name: "c", Image: suite.registry + "/minikubelet/busybox:1.36", Command: []string{"sleep", "3600"}}},
		},
	}
	lctx, lcancel := shortCtx()
	_, err = d.api().CreatePod(lctx, local)
	lcancel()
	require.NoError(t, err)
	refused := d.waitPod(t, "local-cert", "refused at admission", scaled(30*time.Second), func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodFailed
	})
	require.Equal(t, "ClusterProjectionUnavailable", refused.Status.Reason)
	require.Contains(t, refused.Status.Message, `only pods from the cluster's API server get pod certificates: this pod comes from the "api" source`)

	zero := int64(0)
	require.NoError(t, cp.Admin.CoreV1().Pods("default").Delete(ctx, "cert-user", metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	d.waitPod(t, "cert-user", "gone from the node", scaled(30*time.Second), func(p *v1.Pod) bool { return p == nil })
	require.Empty(t, removeLeftovers(ctx, t, r.rt, "cert-user"), "cert-user's sandbox and containers must be gone")
}
