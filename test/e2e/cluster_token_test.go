package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// saDir is where the ServiceAccount admission mounts kube-api-access.
const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// jwtClaims are the claims of a service account token this test reads.
type jwtClaims struct {
	Aud        []string `json:"aud"`
	Sub        string   `json:"sub"`
	Iat        int64    `json:"iat"`
	Exp        int64    `json:"exp"`
	Kubernetes struct {
		Namespace string `json:"namespace"`
		Pod       struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"pod"`
		Node struct {
			Name string `json:"name"`
		} `json:"node"`
		ServiceAccount struct {
			Name string `json:"name"`
		} `json:"serviceaccount"`
	} `json:"kubernetes.io"`
}

// decodeJWT returns the claims of a JWT's payload (not verified: the
// TokenReview does that).
func decodeJWT(t *testing.T, token string) jwtClaims {
	t.Helper()
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3, "a JWT has three parts: %q", token)
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var c jwtClaims
	require.NoError(t, json.Unmarshal(payload, &c), "%s", payload)
	return c
}

// TestCluster_ServiceAccountTokensAreProjected runs `serve --kubeconfig`
// against a real kube-apiserver. A pod that keeps the default
// automountServiceAccountToken gets the ServiceAccount admission's
// kube-api-access volume; the node requests its token through the
// TokenRequest API with its own credentials (the Node authorizer and
// NodeRestriction decide) and the pod runs with token, ca.crt and
// namespace in /var/run/secrets/kubernetes.io/serviceaccount. The token
// is checked from inside the container: its claims name the service
// account, the pod and the node, and the API server accepts it
// (TokenReview). A second projection with an audience and 600 s gets a
// token for that audience and lifetime. A pod of the local API that
// projects a token is refused at admission, saying why.
func TestCluster_ServiceAccountTokensAreProjected(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-token"
	cp := controlplane.Start(t, node)
	r := newPrivateRuntime(t)
	d := r.newDaemon(t, nil, "--node-name", node, "--kubeconfig", cp.NodeKubeconfig(t, node))
	d.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), scaled(3*time.Minute))
	defer cancel()

	vaultExp, one := int64(600), int64(1)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "token-user"},
		Spec: v1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &one,
			Volumes: []v1.Volume{{Name: "vault", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{
				ServiceAccountToken: &v1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: &vaultExp, Path: "vault-token"},
			}}}}}},
			Containers: []v1.Container{{
				Name: "c", Image: suite.registry + "/minikubelet/busybox:1.36",
				Command:      []string{"sleep", "3600"},
				VolumeMounts: []v1.VolumeMount{{Name: "vault", MountPath: "/var/run/secrets/vault"}},
			}},
		},
	}
	created, err := cp.Admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	// The local API may not delete a cluster pod: if the test stops early,
	// the API server deletes it before the daemon's teardown waits for it.
	t.Cleanup(func() {
		if t.Failed() {
			dctx, dcancel := shortCtx()
			defer dcancel()
			zero := int64(0)
			_ = cp.Admin.CoreV1().Pods("default").Delete(dctx, "token-user", metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
	})
	var apiAccess string
	for _, v := range created.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			apiAccess = v.Name
		}
	}
	require.NotEmpty(t, apiAccess, "the ServiceAccount admission adds the kube-api-access volume")

	waitFor(t, "the pod with tokens to run", scaled(90*time.Second), func() string {
		p, err := serverPod(t, cp.Admin, "token-user")
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
		res, err := d.api().Exec(ectx, "default", "token-user", "c", cmd, scaled(10*time.Second))
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode, "%v: %s", cmd, res.Stderr)
		return string(res.Stdout)
	}
	require.Equal(t, "ca.crt\nnamespace\ntoken\n", exec("ls", saDir))
	require.Equal(t, "default", exec("cat", saDir+"/namespace"))
	// kube-root-ca.crt comes from the API server (start.sh put the
	// cluster's CA there, as the controller-manager would).
	ca, err := os.ReadFile(filepath.Join(cp.Dir, "pki", "ca.crt"))
	require.NoError(t, err)
	require.Equal(t, string(ca), exec("cat", saDir+"/ca.crt"))
	require.Equal(t, "644\n", exec("stat", "-L", "-c", "%a", saDir+"/token"), "the volume's defaultMode (420)")
	mounts := exec("cat", "/proc/mounts")
	require.Regexp(t, `(?m)^tmpfs `+saDir+` tmpfs ro[, ]`, mounts, "a token volume is a read-only tmpfs")

	token := exec("cat", saDir+"/token")
	claims := decodeJWT(t, token)
	require.Equal(t, "system:serviceaccount:default:default", claims.Sub)
	require.Equal(t, "default", claims.Kubernetes.ServiceAccount.Name)
	require.Equal(t, "token-user", claims.Kubernetes.Pod.Name)
	require.Equal(t, string(created.UID), claims.Kubernetes.Pod.UID, "bound to the pod")
	require.Equal(t, node, claims.Kubernetes.Node.Name)
	rev, err := cp.Admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.True(t, rev.Status.Authenticated, "the API server accepts the token: %s", rev.Status.Error)
	require.Equal(t, "system:serviceaccount:default:default", rev.Status.User.Username)
	require.Equal(t, authenticationv1.ExtraValue{"token-user"}, rev.Status.User.Extra["authentication.kubernetes.io/pod-name"])

	vault := exec("cat", "/var/run/secrets/vault/vault-token")
	vclaims := decodeJWT(t, vault)
	require.Equal(t, []string{"vault"}, vclaims.Aud)
	require.Equal(t, int64(600), vclaims.Exp-vclaims.Iat)
	require.NotEqual(t, token, vault)
	vrev, err := cp.Admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: vault, Audiences: []string{"vault"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.True(t, vrev.Status.Authenticated, "the vault token is valid for its audience: %s", vrev.Status.Error)

	// A local pod cannot have one: no service account of it exists anywhere.
	local := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "local-token", Namespace: "default"},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{{Name: "t", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{
				ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"},
			}}}}}},
			Containers: []v1.Container{{Name: "c", Image: suite.registry + "/minikubelet/busybox:1.36", Command: []string{"sleep", "3600"}}},
		},
	}
	lctx, lcancel := shortCtx()
	_, err = d.api().CreatePod(lctx, local)
	lcancel()
	require.NoError(t, err)
	refused := d.waitPod(t, "local-token", "refused at admission", scaled(30*time.Second), func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodFailed
	})
	require.Equal(t, "ServiceAccountTokenUnavailable", refused.Status.Reason)
	require.Contains(t, refused.Status.Message, `only pods from the cluster's API server get tokens: this pod comes from the "api" source`)

	// Deleted through the API server (at once: graceful deletion is
	// TestCluster_PodsRunReportAndAreDeleted's): the node tears the pod
	// down, its token volumes (tmpfs) included.
	zero := int64(0)
	require.NoError(t, cp.Admin.CoreV1().Pods("default").Delete(ctx, "token-user", metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	d.waitPod(t, "token-user", "gone from the node", scaled(30*time.Second), func(p *v1.Pod) bool { return p == nil })
	require.Empty(t, removeLeftovers(ctx, t, r.rt, "token-user"), "token-user's sandbox and containers must be gone")
	hostMounts, err := os.ReadFile("/proc/self/mounts")
	require.NoError(t, err)
	require.NotContains(t, string(hostMounts), string(created.UID), "the token volumes' tmpfs mounts must be gone")
}
