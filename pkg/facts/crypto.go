package facts

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// KeyEnv names the variable holding the facts master key: 64 hex
// characters (32 bytes), used for nothing else.
const KeyEnv = "HECTOR_FACTS_KEY"

// ParseKey reads a master key from 64 hex characters.
func ParseKey(text string) ([]byte, error) {
	key, err := hex.DecodeString(strings.TrimSpace(text))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("the facts key must be 64 hex characters (32 bytes); generate one with: openssl rand -hex 32")
	}
	return key, nil
}

// LoadKey returns the master key from $HECTOR_FACTS_KEY or, failing that,
// from dataDir/facts.key, creating that file (mode 0600) the first time and
// warning that it must be backed up. The key is never logged.
func LoadKey(dataDir string, logger *slog.Logger) ([]byte, error) {
	if text := os.Getenv(KeyEnv); text != "" {
		key, err := ParseKey(text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", KeyEnv, err)
		}
		return key, nil
	}
	path := KeyPath(dataDir)
	text, err := os.ReadFile(path)
	if err == nil {
		key, err := ParseKey(string(text))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating the facts key: %w", err)
	}
	_, err = f.WriteString(hex.EncodeToString(key) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("writing the facts key: %w", err)
	}
	logger.Warn("created a facts encryption key: back it up, the facts cannot be read without it (or set "+KeyEnv+")", "path", path)
	return key, nil
}

// KeyPath is the key file LoadKey uses when $HECTOR_FACTS_KEY is not set.
func KeyPath(dataDir string) string { return filepath.Join(dataDir, "facts.key") }

// sealer encrypts values with AES-256-GCM. Each ciphertext is bound to its
// scope and key, so a row moved to another scope or key fails to open.
type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	if len(key) != 32 {
		return nil, errors.New("facts: the master key must be 32 bytes")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead}, nil
}

func (s *sealer) seal(plain string, bound string) []byte {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return s.aead.Seal(nonce, nonce, []byte(plain), []byte(bound))
}

func (s *sealer) open(sealed []byte, bound string) (string, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return "", ErrWrongKey
	}
	plain, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(bound))
	if err != nil {
		return "", ErrWrongKey
	}
	return string(plain), nil
}

// canary is sealed into every store once, so that opening it with another
// key fails at start-up instead of leaving facts silently unreadable.
const canary = "hector facts canary"
