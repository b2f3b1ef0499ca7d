package e2e

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// csrSigner approves and signs the node client CSRs of a control plane
// with its CA, as kube-controller-manager's csrapproving and csrsigning
// controllers would (the harness runs no controller-manager): a bootstrap
// request only from the bootstrap token's user, a renewal only from the
// node itself, and only for system:node:<node>.
type csrSigner struct {
	lifetime time.Duration
	mu       sync.Mutex
	issued   []issuedCSR
}

type issuedCSR struct {
	name, user string
	cert       *x509.Certificate
	serving    bool
}

func (s *csrSigner) run(t *testing.T, cp *controlplane.ControlPlane, node, bootstrapUser string) {
	caPEM, err := os.ReadFile(filepath.Join(cp.Dir, "pki", "ca.crt"))
	require.NoError(t, err)
	keyPEM, err := os.ReadFile(filepath.Join(cp.Dir, "pki", "ca.key"))
	require.NoError(t, err)
	block, _ := pem.Decode(caPEM)
	caCert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	block, _ = pem.Decode(keyPEM)
	caKey, err := x509.ParseECPrivateKey(block.Bytes)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	csrs := cp.Admin.CertificatesV1().CertificateSigningRequests()
	handle := func(csr *certificatesv1.CertificateSigningRequest) error {
		serving := csr.Spec.SignerName == certificatesv1.KubeletServingSignerName
		if len(csr.Status.Conditions) > 0 || csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName && !serving {
			return nil
		}
		if serving && csr.Spec.Username != "system:node:"+node {
			return fmt.Errorf("csr %s: a serving certificate for user %q", csr.Name, csr.Spec.Username)
		}
		b, _ := pem.Decode(csr.Spec.Request)
		if b == nil {
			return fmt.Errorf("csr %s: no PEM request", csr.Name)
		}
		req, err := x509.ParseCertificateRequest(b.Bytes)
		if err != nil {
			return err
		}
		if req.Subject.CommonName != "system:node:"+node || csr.Spec.Username != bootstrapUser && csr.Spec.Username != "system:node:"+node {
			return fmt.Errorf("csr %s: CN %q from user %q is not this node's", csr.Name, req.Subject.CommonName, csr.Spec.Username)
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue, Reason: "E2EApprove", Message: "approved by the e2e test"})
		approved, err := csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
		now := time.Now().Add(-5 * time.Second)
		usage := x509.ExtKeyUsageClientAuth
		if serving {
			usage = x509.ExtKeyUsageServerAuth
		}
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
			SerialNumber: serial, Subject: req.Subject, NotBefore: now, NotAfter: now.Add(s.lifetime),
			DNSNames: req.DNSNames, IPAddresses: req.IPAddresses,
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}, caCert, req.PublicKey, caKey)
		if err != nil {
			return err
		}
		approved.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		if _, err := csrs.UpdateStatus(ctx, approved, metav1.UpdateOptions{}); err != nil {
			return err
		}
		cert, _ := x509.ParseCertificate(der)
		s.mu.Lock()
		s.issued = append(s.issued, issuedCSR{name: csr.Name, user: csr.Spec.Username, cert: cert, serving: serving})
		s.mu.Unlock()
		t.Logf("e2e signer: issued %s to %s (%s), valid until %s", csr.Name, csr.Spec.Username, req.Subject.CommonName, cert.NotAfter.Format(time.TimeOnly))
		return nil
	}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w, err := csrs.Watch(ctx, metav1.ListOptions{})
			if err != nil {
				time.Sleep(time.Second)
				continue
			}
			for ev := range w.ResultChan() {
				if csr, ok := ev.Object.(*certificatesv1.CertificateSigningRequest); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
					if err := handle(csr); err != nil && ctx.Err() == nil {
						t.Errorf("e2e signer: %v", err)
					}
				}
			}
		}
	}()
}

func (s *csrSigner) certs() []issuedCSR {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]issuedCSR(nil), s.issued...)
}

// bootstrapToken makes a bootstrap token as kubeadm does (the Secret in
// kube-system, its group bound to system:node-bootstrapper) and writes the
// bootstrap kubeconfig kubeadm join would write; it returns the kubeconfig
// and the token's user name.
func bootstrapToken(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, dir string) (string, string) {
	const id, secret = "mkl0b1", "0123456789abcdef"
	const group = "system:bootstrappers:kubeadm:default-node-token"
	_, err := cp.Admin.CoreV1().Secrets("kube-system").Create(ctx, &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: "kube-system"},
		Type:       "bootstrap.kubernetes.io/token",
		StringData: map[string]string{"token-id": id, "token-secret": secret, "usage-bootstrap-authentication": "true",
			"auth-extra-groups": group, "expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cp.Admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:kubelet-bootstrap"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: group}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	caPEM, err := os.ReadFile(filepath.Join(cp.Dir, "pki", "ca.crt"))
	require.NoError(t, err)
	path := filepath.Join(dir, "bootstrap-kubelet.conf")
	require.NoError(t, clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"kubernetes": {Server: cp.Server, CertificateAuthorityData: caPEM}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"tls-bootstrap-token-user": {Token: id + "." + secret}},
		Contexts:       map[string]*clientcmdapi.Context{"tls-bootstrap-token-user@kubernetes": {Cluster: "kubernetes", AuthInfo: "tls-bootstrap-token-user"}},
		CurrentContext: "tls-bootstrap-token-user@kubernetes",
	}, path))
	return path, "system:bootstrap:" + id
}

// kcmCSRs are the node certificates kube-controller-manager's csrsigning
// controller issued so far, oldest first.
func kcmCSRs(t *testing.T, ctx context.Context, cs kubernetes.Interface) []issuedCSR {
	t.Helper()
	l, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	// Creation times have a one-second granularity. A node's CSR needs
	// the certificate its bootstrap CSR got, so within one second the
	// bootstrap token's comes first (with a 2-minute certificate backdated
	// 5 minutes, the rotation deadline can fall at once and the node's
	// first renewal share the bootstrap CSR's second).
	bootstrap := func(c certificatesv1.CertificateSigningRequest) bool {
		return strings.HasPrefix(c.Spec.Username, "system:bootstrap:")
	}
	sort.SliceStable(l.Items, func(i, j int) bool {
		a, b := l.Items[i], l.Items[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return bootstrap(a) && !bootstrap(b)
	})
	var out []issuedCSR
	for _, csr := range l.Items {
		b, _ := pem.Decode(csr.Status.Certificate)
		if b == nil {
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		require.NoError(t, err, "csr %s: certificate", csr.Name)
		out = append(out, issuedCSR{name: csr.Name, user: csr.Spec.Username, cert: cert,
			serving: csr.Spec.SignerName == certificatesv1.KubeletServingSignerName})
	}
	return out
}

// approveServing approves the node's kubernetes.io/kubelet-serving CSRs,
// as a cluster's administrator (or kubelet-csr-approver) must:
// kube-controller-manager's csrapproving approves only client
// certificates, and then its csrsigning signs both.
func approveServing(t *testing.T, cp *controlplane.ControlPlane, node string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	csrs := cp.Admin.CertificatesV1().CertificateSigningRequests()
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w, err := csrs.Watch(ctx, metav1.ListOptions{})
			if err != nil {
				time.Sleep(time.Second)
				continue
			}
			for ev := range w.ResultChan() {
				csr, ok := ev.Object.(*certificatesv1.CertificateSigningRequest)
				if !ok || ev.Type != watch.Added || csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || len(csr.Status.Conditions) > 0 {
					continue
				}
				if csr.Spec.Username != "system:node:"+node {
					t.Errorf("csr %s: a serving certificate for user %q", csr.Name, csr.Spec.Username)
					continue
				}
				csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
					Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue, Reason: "E2EApprove", Message: "approved by the e2e test"})
				if _, err := csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
					t.Errorf("approve %s: %v", csr.Name, err)
				}
			}
		}
	}()
}

// TestCluster_TLSBootstrapAndRotation: a node with only a bootstrap token
// kubeconfig (`serve --bootstrap-kubeconfig --kubeconfig --rotate-certificates
// --rotate-server-certificates`, as kubeadm join starts the kubelet)
// requests its client certificate through a CertificateSigningRequest,
// writes --kubeconfig pointing at <root-dir>/pki/kubelet-client-current.pem,
// registers and becomes Ready, and runs a pod. The real
// kube-controller-manager approves (csrapproving: the bootstrap group's
// nodeclient and system:nodes' selfnodeclient permissions, bound as
// kubeadm binds them) and signs (csrsigning, --cluster-signing-duration=2m)
// the client certificates; the test only approves the serving ones, which
// csrapproving never does. With --rotate-server-certificates the kubelet
// port presents a kubernetes.io/kubelet-serving certificate of the cluster
// CA for the Node's InternalIP. Rotation: the signer backdates NotBefore by
// 5 minutes, so a 2-minute certificate spans 7 minutes and its 70-90 %
// deadline falls in its first 78 s; the node renews it by itself (a CSR of
// system:node:<node>) and, after the first certificate expired, still
// renews its Lease and keeps the pod running. About 3 minutes.
func TestCluster_TLSBootstrapAndRotation(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-bootstrap"
	const lifetime = 2 * time.Minute
	cp := controlplane.StartWith(t, controlplane.Options{Controllers: true,
		ControllerManagerFlags: []string{"--cluster-signing-duration", lifetime.String()}})
	ctx, cancel := context.WithTimeout(context.Background(), scaled(6*time.Minute))
	defer cancel()
	confDir := t.TempDir()
	bootstrapKubeconfig, bootstrapUser := bootstrapToken(t, ctx, cp, confDir)
	// kubeadm's auto-approval bindings (phases/bootstraptoken/node).
	for name, b := range map[string]struct{ role, group string }{
		"kubeadm:node-autoapprove-bootstrap":            {"system:certificates.k8s.io:certificatesigningrequests:nodeclient", "system:bootstrappers:kubeadm:default-node-token"},
		"kubeadm:node-autoapprove-certificate-rotation": {"system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes"},
	} {
		_, err := cp.Admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: b.group}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	approveServing(t, cp, node)
	cs := cp.Admin
	clientCerts := func() []issuedCSR {
		var out []issuedCSR
		for _, c := range kcmCSRs(t, ctx, cs) {
			if !c.serving {
				out = append(out, c)
			}
		}
		return out
	}

	kubeconfig := filepath.Join(confDir, "kubelet.conf")
	r := newPrivateRuntime(t)
	d := r.newDaemon(t, nil, "--node-name", node, "--kubeconfig", kubeconfig,
		"--bootstrap-kubeconfig", bootstrapKubeconfig, "--rotate-certificates", "--rotate-server-certificates")
	start := time.Now()
	d.start(t)

	waitFor(t, "the node to register with its CSR-issued certificate and become Ready", scaled(time.Minute), func() string {
		n := clusterNode(t, cs, node)
		if n == nil {
			return fmt.Sprintf("no Node object yet; issued %d client certificates", len(clientCerts()))
		}
		if c := nodeCondition(n, v1.NodeReady); c.Status != v1.ConditionTrue {
			return fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
		}
		return ""
	})
	t.Logf("node Ready %s after the daemon started", time.Since(start).Round(time.Millisecond))
	issued := clientCerts()
	require.NotEmpty(t, issued)
	first := issued[0]
	require.Equal(t, bootstrapUser, first.user, "the first request is the bootstrap token's")
	require.Regexp(t, `^node-csr-`, first.name)
	bootCSR, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, first.name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "AutoApproved", bootCSR.Status.Conditions[0].Reason, "kube-controller-manager's csrapproving approved it")
	require.Equal(t, "system:node:"+node, first.cert.Subject.CommonName)
	require.Equal(t, []string{"system:nodes"}, first.cert.Subject.Organization)
	require.WithinDuration(t, time.Now().Add(lifetime), first.cert.NotAfter, lifetime, "--cluster-signing-duration=%s", lifetime)

	// The files, as the kubelet leaves them.
	current := filepath.Join(d.root, "pki", "kubelet-client-current.pem")
	target, err := os.Readlink(current)
	require.NoError(t, err)
	fi, err := os.Stat(target)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	require.NoError(t, err)
	auth := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo]
	require.Equal(t, current, auth.ClientCertificate)
	require.Empty(t, auth.Token)
	fi, err = os.Stat(kubeconfig)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	// The written kubeconfig is the node's identity on the API server.
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	nodeCS, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = nodeCS.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err, "system:node:%s reads its Node", node)

	one := int64(1)
	_, err = cs.CoreV1().Pods("default").Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrapped"},
		Spec: v1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &one, Containers: []v1.Container{{
			Name: "c", Image: suite.registry + "/minikubelet/busybox:1.36", Command: []string{"sleep", "3600"}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		dctx, dcancel := shortCtx()
		defer dcancel()
		zero := int64(0)
		_ = cs.CoreV1().Pods("default").Delete(dctx, "bootstrapped", metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	var containerID string
	waitFor(t, "the pod to run", scaled(90*time.Second), func() string {
		p, err := serverPod(t, cs, "bootstrapped")
		if err != nil || p == nil {
			return fmt.Sprintf("get: %v", err)
		}
		if !isRunning(p) {
			return podSummary(p)
		}
		containerID = p.Status.ContainerStatuses[0].ContainerID
		return ""
	})

	// serverTLSBootstrap: the kubelet port presents a certificate of the
	// cluster CA for the Node's InternalIP.
	n := clusterNode(t, cs, node)
	port := n.Status.DaemonEndpoints.KubeletEndpoint.Port
	require.NotZero(t, port)
	ip := n.Status.Addresses[0].Address
	caPEM, err := os.ReadFile(filepath.Join(cp.Dir, "pki", "ca.crt"))
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(caPEM))
	waitFor(t, "the kubelet port to present the CSR-issued serving certificate", scaled(30*time.Second), func() string {
		conn, err := tls.Dial("tcp", net.JoinHostPort(ip, fmt.Sprint(port)), &tls.Config{RootCAs: roots})
		if err != nil {
			return err.Error()
		}
		defer conn.Close()
		leaf := conn.ConnectionState().PeerCertificates[0]
		if leaf.Subject.CommonName != "system:node:"+node {
			return "serving certificate " + leaf.Subject.String()
		}
		return ""
	})
	require.FileExists(t, filepath.Join(d.root, "pki", "kubelet-server-current.pem"))

	// Rotation: a renewal by the node itself, approved and signed by
	// kube-controller-manager, then life after the first certificate
	// expired.
	span := first.cert.NotAfter.Sub(first.cert.NotBefore)
	var renewal issuedCSR
	waitFor(t, "the node to renew its client certificate", scaled(time.Until(first.cert.NotAfter)+30*time.Second), func() string {
		for _, c := range clientCerts() {
			if c.user == "system:node:"+node {
				renewal = c
				return ""
			}
		}
		return fmt.Sprintf("issued: %d client certificates, none to system:node:%s yet", len(clientCerts()), node)
	})
	renewedAt := renewal.cert.NotBefore.Add(5 * time.Minute) // the signer's backdating
	t.Logf("renewed %s after the first certificate's NotBefore (span %s, NotAfter %s)",
		renewedAt.Sub(first.cert.NotBefore).Round(time.Second), span, first.cert.NotAfter.Format(time.TimeOnly))
	require.GreaterOrEqual(t, renewedAt.Sub(first.cert.NotBefore), span*7/10-5*time.Second, "renewed at 70-90 %% of the span, not earlier")
	require.True(t, renewedAt.Before(first.cert.NotAfter), "renewed before the first certificate expired")
	expired := first.cert.NotAfter
	waitFor(t, "the Lease to be renewed after the first certificate expired", scaled(time.Until(expired)+45*time.Second), func() string {
		l := nodeLease(t, cs, node)
		if l == nil || l.Spec.RenewTime == nil {
			return "no lease"
		}
		if !l.Spec.RenewTime.After(expired.Add(5 * time.Second)) {
			return fmt.Sprintf("lease renewed at %s, the first certificate expired at %s", l.Spec.RenewTime.Format(time.TimeOnly), expired.Format(time.TimeOnly))
		}
		return ""
	})
	n = clusterNode(t, cs, node)
	require.Equal(t, v1.ConditionTrue, nodeCondition(n, v1.NodeReady).Status)
	p, err := serverPod(t, cs, "bootstrapped")
	require.NoError(t, err)
	require.True(t, isRunning(p), podSummary(p))
	require.Equal(t, containerID, p.Status.ContainerStatuses[0].ContainerID, "the pod kept running through the rotation")
	require.Zero(t, p.Status.ContainerStatuses[0].RestartCount)
	now, err := os.Readlink(current)
	require.NoError(t, err)
	require.NotEqual(t, target, now, "kubelet-client-current.pem points at the renewed pair")
	t.Logf("client certificates issued by kube-controller-manager: %d (the bootstrap one and %d renewals)", len(clientCerts()), len(clientCerts())-1)
}
