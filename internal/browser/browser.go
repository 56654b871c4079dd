// Package browser drives a headless Chromium from tests over the DevTools protocol (CDP),
// with a small WebSocket client of its own: no browser automation dependency.
//
// Start looks for Chromium at $CHROMIUM, /usr/bin/chromium, /usr/bin/chromium-browser,
// /usr/bin/google-chrome; without one the test skips on a laptop and fails with CI=true
// (Debian: apt-get install chromium; .ci/run installs it when missing).
package browser

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Timeout bounds every wait of a test on the browser.
const Timeout = 30 * time.Second

// Browser is a headless Chromium process and its DevTools connection.
type Browser struct {
	t      testing.TB
	ws     *wsConn
	mu     sync.Mutex
	nextID int64
	calls  map[int64]chan response
	events chan event
	subsMu sync.Mutex
	subs   []func(event)
}

type response struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type event struct {
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	SessionID string          `json:"sessionId"`
}

// Path returns the Chromium executable, or "" when none is installed.
func Path() string {
	cands := []string{os.Getenv("CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}
	for _, c := range cands {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	return ""
}

// Start launches a headless Chromium with a fresh profile; it is stopped at cleanup.
func Start(t testing.TB) *Browser {
	t.Helper()
	path := Path()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed and CI=true: apt-get install chromium (or set CHROMIUM)")
		}
		t.Skip("chromium is not installed (apt-get install chromium; CI=true fails instead)")
	}
	profile, err := os.MkdirTemp("", "subsync-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, path,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1280,900",
		"--user-data-dir="+profile, "--remote-debugging-port=0", "about:blank")
	// Its own process group, so that stopping it stops its renderers too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start chromium: %v", err)
	}
	wsURL := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if u, ok := strings.CutPrefix(line, "DevTools listening on "); ok && !sent {
				wsURL <- strings.TrimSpace(u)
				sent = true
			}
		}
		if !sent {
			close(wsURL)
		}
	}()
	var u string
	select {
	case v, ok := <-wsURL:
		if !ok {
			cancel()
			_ = cmd.Wait()
			t.Fatal("chromium exited before listening for DevTools")
		}
		u = v
	case <-time.After(Timeout):
		cancel()
		_ = cmd.Wait()
		t.Fatal("chromium did not listen for DevTools in time")
	}
	ws, err := dialWS(u)
	if err != nil {
		cancel()
		_ = cmd.Wait()
		t.Fatalf("connect to chromium: %v", err)
	}
	b := &Browser{t: t, ws: ws, calls: map[int64]chan response{}}
	go b.readLoop()
	t.Cleanup(func() {
		// Ask the browser to quit, then make sure its whole process group is gone before
		// its profile is removed.
		_ = b.call("", "Browser.close", map[string]any{}, nil)
		_ = ws.close()
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
		cancel()
		<-exited
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = os.RemoveAll(profile)
	})
	return b
}

func (b *Browser) readLoop() {
	for {
		msg, err := b.ws.readMessage()
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.calls {
				close(ch)
				delete(b.calls, id)
			}
			b.mu.Unlock()
			return
		}
		var m struct {
			ID int64 `json:"id"`
			response
			event
		}
		if json.Unmarshal(msg, &m) != nil {
			continue
		}
		if m.ID != 0 {
			b.mu.Lock()
			ch := b.calls[m.ID]
			delete(b.calls, m.ID)
			b.mu.Unlock()
			if ch != nil {
				ch <- m.response
			}
			continue
		}
		b.subsMu.Lock()
		subs := append([]func(event){}, b.subs...)
		b.subsMu.Unlock()
		for _, f := range subs {
			f(m.event)
		}
	}
}

// call sends a command (to a page's session when sessionID is set) and decodes its result.
func (b *Browser) call(sessionID, method string, params any, result any) error {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan response, 1)
	b.calls[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if sessionID != "" {
		msg["sessionId"] = sessionID
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if err := b.ws.writeText(data); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: the browser closed the connection", method)
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, r.Error.Message, r.Error.Code)
		}
		if result != nil {
			return json.Unmarshal(r.Result, result)
		}
		return nil
	case <-time.After(Timeout):
		return fmt.Errorf("%s: no answer in %s", method, Timeout)
	}
}

// subscribe calls f for every event until the returned function is called.
func (b *Browser) subscribe(f func(event)) (unsubscribe func()) {
	b.subsMu.Lock()
	defer b.subsMu.Unlock()
	b.subs = append(b.subs, f)
	i := len(b.subs) - 1
	return func() {
		b.subsMu.Lock()
		defer b.subsMu.Unlock()
		b.subs[i] = func(event) {}
	}
}

// Page is a browser tab.
type Page struct {
	b       *Browser
	t       testing.TB
	session string
}

// NewPage opens a tab. headers are sent with every request of the tab (Authorization).
func (b *Browser) NewPage(headers map[string]string) *Page {
	b.t.Helper()
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		b.t.Fatal(err)
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		b.t.Fatal(err)
	}
	p := &Page{b: b, t: b.t, session: att.SessionID}
	p.must("Page.enable", nil, nil)
	p.must("Network.enable", nil, nil)
	if len(headers) > 0 {
		p.must("Network.setExtraHTTPHeaders", map[string]any{"headers": headers}, nil)
	}
	return p
}

func (p *Page) must(method string, params, result any) {
	p.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	if err := p.b.call(p.session, method, params, result); err != nil {
		p.t.Fatal(err)
	}
}

// loaded returns a channel closed at the tab's next load event.
func (p *Page) loaded() (<-chan struct{}, func()) {
	ch := make(chan struct{})
	var once sync.Once
	unsub := p.b.subscribe(func(e event) {
		if e.SessionID == p.session && e.Method == "Page.loadEventFired" {
			once.Do(func() { close(ch) })
		}
	})
	return ch, unsub
}

func (p *Page) waitLoaded(ch <-chan struct{}, what string) {
	p.t.Helper()
	select {
	case <-ch:
	case <-time.After(Timeout):
		p.t.Fatalf("%s: the page did not load in %s", what, Timeout)
	}
}

// Navigate loads url and waits for its load event. It returns the HTTP status of the
// document.
func (p *Page) Navigate(url string) int {
	p.t.Helper()
	ch, unsub := p.loaded()
	defer unsub()
	var res struct {
		ErrorText string `json:"errorText"`
	}
	p.must("Page.navigate", map[string]any{"url": url}, &res)
	if res.ErrorText != "" {
		p.t.Fatalf("navigate to %s: %s", url, res.ErrorText)
	}
	p.waitLoaded(ch, url)
	var status int
	p.evalInto(`performance.getEntriesByType("navigation")[0]?.responseStatus ?? 0`, &status)
	return status
}

// Click clicks the element matching selector and waits for the page it leads to.
func (p *Page) Click(selector string) {
	p.t.Helper()
	ch, unsub := p.loaded()
	defer unsub()
	var found bool
	p.evalInto(fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true })()`, selector), &found)
	if !found {
		p.t.Fatalf("click: nothing matches %s on %s", selector, p.URL())
	}
	p.waitLoaded(ch, "click "+selector)
}

// Eval evaluates a JavaScript expression (awaiting a promise) and returns its value as JSON.
func (p *Page) Eval(expr string) json.RawMessage {
	p.t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	p.must("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &res)
	if res.ExceptionDetails != nil {
		p.t.Fatalf("evaluate %s: %s %s", expr, res.ExceptionDetails.Text, res.ExceptionDetails.Exception.Description)
	}
	return res.Result.Value
}

func (p *Page) evalInto(expr string, v any) {
	p.t.Helper()
	raw := p.Eval(expr)
	if len(raw) == 0 {
		return
	}
	if err := json.Unmarshal(raw, v); err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
}

// Text returns the text of the element matching selector ("" when none does).
func (p *Page) Text(selector string) string {
	p.t.Helper()
	var s string
	p.evalInto(fmt.Sprintf(`document.querySelector(%q)?.innerText ?? ""`, selector), &s)
	return s
}

// Texts returns the text of every element matching selector.
func (p *Page) Texts(selector string) []string {
	p.t.Helper()
	var s []string
	p.evalInto(fmt.Sprintf(`Array.from(document.querySelectorAll(%q), e => e.innerText)`, selector), &s)
	return s
}

// URL is the tab's current address.
func (p *Page) URL() string {
	p.t.Helper()
	var s string
	p.evalInto(`location.href`, &s)
	return s
}

// WaitFor waits until the JavaScript expression is true (a page that builds itself with
// scripts, such as River UI, or one that updates itself while a run goes on), checking every
// 20 ms inside the page. It uses timers, not animation frames, so that it works in a tab that
// is not in front (where a browser throttles timers to once a second and runs no frames).
func (p *Page) WaitFor(expr string) {
	p.t.Helper()
	// The page gives up a little before the DevTools call would, so that a condition that
	// never holds is reported as such.
	js := fmt.Sprintf(`new Promise((resolve) => {
  const deadline = Date.now() + %d;
  const check = () => {
    let ok = false;
    try { ok = !!(%s); } catch (e) {}
    if (ok || Date.now() > deadline) { resolve(ok); return; }
    setTimeout(check, 20);
  };
  check();
})`, (Timeout - 3*time.Second).Milliseconds(), expr)
	var ok bool
	p.evalInto(js, &ok)
	if !ok {
		var shows string
		p.evalInto(`(document.body?.innerText || "").slice(0, 800)`, &shows)
		p.t.Fatalf("waited %s for %s on %s; the page shows: %q", Timeout, expr, p.URL(), shows)
	}
}

// Screenshot writes a PNG of the whole page to path.
func (p *Page) Screenshot(path string) {
	p.t.Helper()
	var res struct {
		Data string `json:"data"`
	}
	p.must("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &res)
	data, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// Download clicks the link matching selector with downloads allowed into dir and waits for
// the file; it returns the file's contents.
func (p *Page) Download(selector, dir string) []byte {
	p.t.Helper()
	done := make(chan string, 1)
	unsub := p.b.subscribe(func(e event) {
		if e.Method != "Browser.downloadProgress" {
			return
		}
		var ev struct {
			GUID  string `json:"guid"`
			State string `json:"state"`
		}
		if json.Unmarshal(e.Params, &ev) == nil && (ev.State == "completed" || ev.State == "canceled") {
			select {
			case done <- ev.GUID + " " + ev.State:
			default:
			}
		}
	})
	defer unsub()
	if err := p.b.call("", "Browser.setDownloadBehavior", map[string]any{
		"behavior": "allowAndName", "downloadPath": dir, "eventsEnabled": true}, nil); err != nil {
		p.t.Fatal(err)
	}
	var found bool
	p.evalInto(fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true })()`, selector), &found)
	if !found {
		p.t.Fatalf("download: nothing matches %s", selector)
	}
	select {
	case v := <-done:
		guid, state, _ := strings.Cut(v, " ")
		if state != "completed" {
			p.t.Fatalf("download %s: %s", selector, state)
		}
		data, err := os.ReadFile(filepath.Join(dir, guid))
		if err != nil {
			p.t.Fatal(err)
		}
		return data
	case <-time.After(Timeout):
		p.t.Fatalf("download %s: not completed in %s", selector, Timeout)
	}
	return nil
}

// SetFiles puts files in the file input matching selector, as a person choosing them would.
func (p *Page) SetFiles(selector string, files ...string) {
	p.t.Helper()
	var doc struct {
		Root struct {
			NodeID int64 `json:"nodeId"`
		} `json:"root"`
	}
	p.must("DOM.getDocument", map[string]any{"depth": 0}, &doc)
	var node struct {
		NodeID int64 `json:"nodeId"`
	}
	p.must("DOM.querySelector", map[string]any{"nodeId": doc.Root.NodeID, "selector": selector}, &node)
	if node.NodeID == 0 {
		p.t.Fatalf("set files: nothing matches %s on %s", selector, p.URL())
	}
	abs := make([]string, len(files))
	for i, f := range files {
		a, err := filepath.Abs(f)
		if err != nil {
			p.t.Fatal(err)
		}
		abs[i] = a
	}
	p.must("DOM.setFileInputFiles", map[string]any{"nodeId": node.NodeID, "files": abs}, nil)
}

// OnEveryDocument runs the JavaScript source in every document the tab loads from now on,
// before the document's own scripts (a test's watch for what a page must never do).
func (p *Page) OnEveryDocument(source string) {
	p.t.Helper()
	p.must("Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": source}, nil)
}

// BypassCSP makes the tab ignore the pages' Content-Security-Policy from its next load on, so
// that a test sees what the markup alone would do: escaping is checked apart from the policy
// that would otherwise stop an injected script.
func (p *Page) BypassCSP() {
	p.t.Helper()
	p.must("Page.setBypassCSP", map[string]any{"enabled": true}, nil)
}
