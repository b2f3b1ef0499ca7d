package cluster

// Service account tokens for the node's pods: the TokenRequest API
// (POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token), the request
// the kubelet's token manager makes through client-go's typed CreateToken.
// It uses NewClient's REST client for core/v1 (as JSON; the same
// connections, scheme and rate limiter as the node's other requests), so
// that the agent does not link client-go's whole clientset for one call.
// The agent caches and refreshes the tokens (agent/token.go).

import (
	"context"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/minikubelet/minikubelet/agent/volume"
)

// TokenSource requests service account tokens from the API server; it is
// the agent's Deps.Tokens in cluster mode.
type TokenSource struct {
	client rest.Interface
}

var _ volume.TokenSource = (*TokenSource)(nil)

// NewTokenSource returns the token source of api, which must be the client
// NewClient returned.
func NewTokenSource(api API) (*TokenSource, error) {
	ra, ok := api.(*restAPI)
	if !ok {
		return nil, fmt.Errorf("token requests need the API server client NewClient returns, not a %T", api)
	}
	return &TokenSource{client: ra.tokens}, nil
}

// Token implements volume.TokenSource: a token of the pod's service account
// bound to the pod, for the projection's audience (none: the API server's
// own) and lifetime. Errors say what the cluster's administrator can do.
func (s *TokenSource) Token(ctx context.Context, pod *v1.Pod, src *v1.ServiceAccountTokenProjection) ([]byte, time.Time, error) {
	sa := pod.Spec.ServiceAccountName
	req := &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: src.ExpirationSeconds,
			BoundObjectRef: &authenticationv1.BoundObjectReference{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
			},
		},
	}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	out := &authenticationv1.TokenRequest{}
	err := s.client.Post().Namespace(pod.Namespace).Resource("serviceaccounts").Name(sa).SubResource("token").
		Body(req).Do(ctx).Into(out)
	if err != nil {
		return nil, time.Time{}, tokenError(pod.Namespace, sa, err)
	}
	if out.Status.Token == "" {
		return nil, time.Time{}, errors.New("the API server answered the token request without a token")
	}
	return []byte(out.Status.Token), out.Status.ExpirationTimestamp.Time, nil
}

// tokenError adds to a failed request what to do about it.
func tokenError(ns, sa string, err error) error {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w; the node's credentials need \"create serviceaccounts/token\" for the pods bound to it: "+
			"the system:node ClusterRole with the Node authorizer (--authorization-mode=Node,RBAC, user system:node:<node name> in group system:nodes) grants it for pods bound to this node; "+
			"a new pod may be refused for a moment until the authorizer has seen it", err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w; create the service account (kubectl create serviceaccount -n %s %s), or check that the API server serves TokenRequest (--service-account-issuer and --service-account-signing-key-file)", err, ns, sa)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%w; the API server does not accept the node's credentials: check the client certificate or token in the kubeconfig", err)
	}
	return err
}
