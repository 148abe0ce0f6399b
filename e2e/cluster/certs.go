package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// credentials are the files kube-apiserver needs, generated in Go so that the
// harness does not depend on openssl.
type credentials struct {
	caPEM      []byte // CA that signed the serving certificate; goes into the kubeconfig
	servingCrt string // path
	servingKey string // path
	saKey      string // path: RSA private key, PKCS#1 PEM (service-account token signing)
	saPub      string // path: RSA public key, PKIX PEM
	tokenFile  string // path: static token auth file
	token      string // bearer token of the system:masters user
}

func writeCredentials(dir string) (credentials, error) {
	var c credentials
	now := time.Now()

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "shardinformer-e2e-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return c, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return c, err
	}
	c.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})

	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 0, 0, 1)},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return c, err
	}
	srvKeyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		return c, err
	}
	c.servingCrt = filepath.Join(dir, "serving.crt")
	c.servingKey = filepath.Join(dir, "serving.key")
	if err := writePEM(c.servingCrt, "CERTIFICATE", srvDER); err != nil {
		return c, err
	}
	if err := writePEM(c.servingKey, "EC PRIVATE KEY", srvKeyDER); err != nil {
		return c, err
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return c, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return c, err
	}
	c.saKey = filepath.Join(dir, "sa.key")
	c.saPub = filepath.Join(dir, "sa.pub")
	if err := writePEM(c.saKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)); err != nil {
		return c, err
	}
	if err := writePEM(c.saPub, "PUBLIC KEY", saPubDER); err != nil {
		return c, err
	}

	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return c, err
	}
	c.token = hex.EncodeToString(tok)
	c.tokenFile = filepath.Join(dir, "tokens.csv")
	line := fmt.Sprintf("%s,admin,admin,system:masters\n", c.token)
	if err := os.WriteFile(c.tokenFile, []byte(line), 0o600); err != nil {
		return c, err
	}
	return c, nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
