package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestUI starts demiurge ui on a store, follows the link it prints, reads
// the list of worlds, is refused without the token, and stops on the
// command's context (Ctrl-C).
func TestUI(t *testing.T) {
	t.Parallel()
	dir := counterStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	var errOut strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, []string{"--store", dir, "ui"}, stdio{in: strings.NewReader(""), out: pw, err: &errOut},
			func(string) string { return "" })
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var link string
	for sc.Scan() && link == "" {
		link = regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{64}`).FindString(sc.Text())
	}
	if link == "" {
		t.Fatalf("no link printed; stderr %q", errOut.String())
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	base := strings.TrimSuffix(link[:strings.Index(link, "?")], "/")

	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("without the token: %d; want 403", resp.StatusCode)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	resp, err = c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `href="/w/main"`) || resp.Request.URL.RawQuery != "" {
		t.Errorf("the link: %d at %s:\n%s", resp.StatusCode, resp.Request.URL, b)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after Ctrl-C; stderr %q", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("demiurge ui still runs after Ctrl-C")
	}
}

func TestUIAddr(t *testing.T) {
	t.Parallel()
	dir := counterStore(t)
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:80", "127.0.0.1"} {
		r := run(t, nil, "", "--store", dir, "ui", "--addr", addr)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--addr: ui: not a loopback HOST:PORT") {
			t.Errorf("--addr %s: exit %d, stderr %q; want a usage error", addr, r.code, r.stderr)
		}
	}
}
