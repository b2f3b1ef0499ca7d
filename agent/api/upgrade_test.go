package api_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/agent/api"
)

// TestUpgradeNeedsNoContentType: kubectl exec/attach/port-forward send a
// body-less POST asking for a protocol upgrade, without a Content-Type;
// the media-type check lets it through to the route (which answers for
// itself), while a POST with a body and no Content-Type stays a 415.
func TestUpgradeNeedsNoContentType(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	b.SetPod(testPod("default", "web", "c"))
	url := srv.URL + "/api/v1/namespaces/default/pods/web/exec?command=true"

	req, err := http.NewRequest(http.MethodPost, url, nil)
	require.NoError(t, err)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "SPDY/3.1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.NotEqual(t, http.StatusUnsupportedMediaType, resp.StatusCode, "%s", body)

	code, body2, _ := request(t, http.MethodPost, url, "", "x")
	assert.Equal(t, http.StatusUnsupportedMediaType, code, body2)
}
