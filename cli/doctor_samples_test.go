package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink/sinktest"
)

// TestDoctorSamplesMaskEchoedCredentials: doctor --save-samples keeps what the service
// answered, but not the credentials a service echoes in a member the samples keep
// ("message", "status"): the Basic token, the key, URL-encoded or in base64 (#35 point 10).
func TestDoctorSamplesMaskEchoedCredentials(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	token := base64.StdEncoding.EncodeToString([]byte(h.srv.User + ":" + testKey))
	forms := []string{testKey, token, strings.TrimRight(token, "="), base64.URLEncoding.EncodeToString([]byte(h.srv.User + ":" + testKey)),
		base64.StdEncoding.EncodeToString([]byte(testKey)), url.QueryEscape("Basic " + token)}
	echo := strings.Join(forms, " ")
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/subscriberlists") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			msg, _ := json.Marshal(map[string]string{"status": "401 " + r.Header.Get("Authorization"), "message": "bad credentials: " + echo})
			_, _ = w.Write(msg)
			return
		}
		h.srv.HTTP.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	h.write(fmt.Sprintf(`
[api]
base_url = %q
legacy_base_url = %q
user_id = %q
max_attempts = 1
[worker]
metrics_address = "off"
`, hs.URL+sinktest.V2Prefix, hs.URL+sinktest.V3Prefix, h.srv.User))

	dir := filepath.Join(h.dir, "samples")
	r := h.run("", "doctor", "--save-samples", dir)
	require.Contains(t, r.stdout, "saved to "+dir, r.stderr)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var all strings.Builder
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		all.Write(b)
	}
	require.Contains(t, all.String(), "bad credentials: xxxxx", "the echo is kept, masked")
	for _, f := range forms {
		require.NotContains(t, all.String(), f)
	}
	require.NotContains(t, r.stdout+r.stderr, testKey)
}
