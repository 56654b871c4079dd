package web_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/web"
)

// uploadForm is the multipart body the upload form sends: the CSRF token, then the file.
func uploadForm(t *testing.T, csrf, name string, content []byte) (string, io.Reader) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	require.NoError(t, w.WriteField("csrf", csrf))
	fw, err := w.CreateFormFile("file", name)
	require.NoError(t, err)
	_, err = fw.Write(content)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return w.FormDataContentType(), &b
}

func post(t *testing.T, srv *httptest.Server, path, contentType string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("POST", srv.URL+path, body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(data)
}

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	require.NotNil(t, m, "no CSRF token on the page")
	return m[1]
}

// The upload takes what `subsync import` takes, with the same checks, up to the limit: a
// file over it is refused (413) with nothing staged; an Excel 97-2003 workbook, or a file that
// is not what its name says, is refused (422) naming why; the form needs its CSRF token; a
// token for an upload the pages did not make finds nothing; an upload makes one import. On
// loopback without a password the page masks the addresses it shows.
func TestUploadChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	emu := sinktest.NewServer(t)
	list := emu.CreateList("Nyhetsbrev")
	rt := openRuntime(t, "sqlite", emu, t.TempDir(), jobs.Config{})
	pages, err := web.New(rt, web.Options{MaxUploadSize: 1 << 10})
	require.NoError(t, err)
	srv := httptest.NewServer(pages)
	defer srv.Close()
	c := client{t: t, base: srv.URL}
	_, body := c.do("GET", "/imports/new", nil, nil)
	csrf := csrfOf(t, body)
	staged := func() int {
		var n int
		require.NoError(t, rt.State().DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_staged_file").Scan(&n))
		return n
	}

	ct, form := uploadForm(t, "wrong", "a.csv", []byte("E-post\na@example.com\n"))
	resp, _ := post(t, srv, "/imports", ct, form)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no CSRF token")

	big := []byte("E-post\n" + strings.Repeat("someone@example.com\n", 100))
	ct, form = uploadForm(t, csrf, "big.csv", big)
	resp, body = post(t, srv, "/imports", ct, form)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	require.Contains(t, body, "larger than the 1 KiB these pages take (web.max_upload_size)")
	require.Zero(t, staged(), "nothing of it kept")

	ct, form = uploadForm(t, csrf, "old.xls", []byte{0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1})
	resp, body = post(t, srv, "/imports", ct, form)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, "an Excel 97-2003 workbook (.xls) is not supported: save it as .xlsx or CSV")
	ct, form = uploadForm(t, csrf, "text.xlsx", []byte("E-post\na@example.com\n"))
	resp, body = post(t, srv, "/imports", ct, form)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, "it is named as an Excel workbook but it is")
	require.Zero(t, staged())

	ct, form = uploadForm(t, csrf, "kontakter.csv", []byte("E-post;Fornavn\nkari@example.no;Kari\n"))
	resp, _ = post(t, srv, "/imports", ct, form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	page := resp.Header.Get("Location")
	require.Regexp(t, `^/imports/\d+-[0-9a-f]{32}$`, page)
	require.Equal(t, 1, staged())
	resp, body = c.do("GET", page, nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `value=";"`, "the delimiter found")
	require.Contains(t, body, "k***@example.no", "masked without the password")
	require.NotContains(t, body, "kari@example.no")
	forged := regexp.MustCompile(`-[0-9a-f]{32}$`).ReplaceAllString(page, "-"+strings.Repeat("0", 32))
	resp, _ = c.do("GET", forged, nil, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	imp := url.Values{"csrf": {csrf}, "action": {"import"}, "list": {fmt.Sprint(list)}, "col0": {"email"}, "col1": {"firstname"}}
	resp, _ = c.do("POST", page, imp, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Regexp(t, `^/jobs/\d+$`, resp.Header.Get("Location"))
	resp, body = c.do("POST", page, imp, nil)
	require.Equal(t, http.StatusGone, resp.StatusCode, "one upload, one import")
	require.Contains(t, body, "imported already")
	queued, err := rt.Jobs(ctx)
	require.NoError(t, err)
	require.Len(t, queued, 1)
	require.Equal(t, "kontakter.csv", queued[0].Name)
}
