// Package testdisk gives tests a small disk they can fill: a tmpfs mounted for the test (so
// root only). Without the right to mount, a test skips on a developer machine and fails when
// CI=true, so CI can never pass by skipping.
package testdisk

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Small mounts a tmpfs of size bytes on a new directory, unmounted at cleanup, and returns
// the directory.
func Small(t testing.TB, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("small disk: %v", err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount a tmpfs (CI=true: run as root): %v: %s", err, out)
		}
		t.Skipf("cannot mount a tmpfs (run as root, or set CI=true to fail instead): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("unmount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// Fill writes a file in dir until the disk is full, then frees keep bytes of it; it returns
// the file's path (removing it frees the disk).
func Fill(t testing.TB, dir string, keep int64) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("fill disk: %v", err)
	}
	block := make([]byte, 64<<10)
	for {
		if _, err = f.Write(block); err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("fill disk: %v", err)
	}
	st, err := f.Stat()
	if err == nil {
		err = f.Truncate(max(0, st.Size()-keep))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("fill disk: %v", err)
	}
	return path
}
