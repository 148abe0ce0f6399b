//go:build unix

package cluster

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestWriteCredentials(t *testing.T) {
	dir := t.TempDir()
	c, err := writeCredentials(dir)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.caPEM) {
		t.Fatal("CA PEM does not parse")
	}
	srv := readCert(t, c.servingCrt)
	if _, err := srv.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("serving cert does not verify for 127.0.0.1: %v", err)
	}
	b, err := os.ReadFile(c.saKey)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("sa.key is not PEM")
	}
	if _, err := x509.ParsePKCS1PrivateKey(blk.Bytes); err != nil {
		t.Errorf("sa.key: %v", err)
	}
	if c.token == "" {
		t.Error("empty token")
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s is not PEM", path)
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestFindBinariesMissing(t *testing.T) {
	t.Setenv(BinDirEnv, t.TempDir())
	if _, err := FindBinaries(); !errors.Is(err, ErrBinariesMissing) {
		t.Fatalf("FindBinaries() error = %v, want ErrBinariesMissing", err)
	}
	dir := t.TempDir()
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(BinDirEnv, dir)
	if _, err := FindBinaries(); err != nil {
		t.Fatalf("FindBinaries() with both files: %v", err)
	}
}

func TestRemoveStaleDirs(t *testing.T) {
	parent := t.TempDir()
	mk := func(name, owner string) string {
		d := filepath.Join(parent, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(d, ownerFile), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	// A pid above the kernel's maximum (4194304) can never be alive.
	stale := mk(dirPrefix+"stale", "99999999")
	live := mk(dirPrefix+"live", strconv.Itoa(os.Getpid()))
	unowned := mk(dirPrefix+"unowned", "")
	other := mk("something-else", "99999999")
	removeStaleDirs(parent, t.Logf)
	for d, want := range map[string]bool{stale: false, live: true, unowned: true, other: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: exists=%v, want %v", filepath.Base(d), err == nil, want)
		}
	}
}
