package serve

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/internal/readall"
	"github.com/demiurge-dev/demiurge/journal"
)

// A Token is a bearer token a token file holds: its id, a name for people,
// the worlds it may reach, and the SHA-256 of the token itself. The token
// is shown once, when made; the file never holds it.
type Token struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Hash is "sha256:" and the hex SHA-256 of the whole token. The
	// token carries 256 random bits: a fast hash is enough (there is no
	// password to guess from it).
	Hash string `json:"hash"`
	// Worlds are the worlds the token may reach; "*" is every world.
	Worlds  []string  `json:"worlds"`
	Created time.Time `json:"created"`
}

// Allows reports whether the token may reach world.
func (t Token) Allows(world string) bool {
	return slices.Contains(t.Worlds, "*") || slices.Contains(t.Worlds, world)
}

// tokenFileJSON is a token file's content.
type tokenFileJSON struct {
	Format string  `json:"format"`
	Tokens []Token `json:"tokens"`
}

// tokenFormat names the file's format.
const tokenFormat = "demiurge/serve-tokens/v1"

// tokenPrefix begins every token, so that a leaked one is recognized
// (secret scanners, logs).
const tokenPrefix = "dmt_"

// maxTokenFile bounds a token file: a line or two per token (a FIFO or
// /dev/zero named as the file is refused, not read).
const maxTokenFile = 16 << 20

// TokenFile is a file of tokens (demiurge serve --token-file), read again
// when it changes: a token made or revoked while the server runs is
// honored within a second.
type TokenFile struct {
	path string

	mu      sync.Mutex
	tokens  map[string]Token // by id
	stat    fs.FileInfo      // the file as last read
	checked time.Time        // when it was last looked at
}

// ErrNoTokenFile is returned (wrapped) by OpenTokenFile for a file that is
// not there.
var ErrNoTokenFile = errors.New("serve: no token file")

// OpenTokenFile reads the token file at path.
func OpenTokenFile(path string) (*TokenFile, error) {
	f := &TokenFile{path: path}
	if err := f.reload(true); err != nil {
		return nil, err
	}
	return f, nil
}

// Path is the file's path.
func (f *TokenFile) Path() string { return f.path }

// reload reads the file if it changed (or if force).
func (f *TokenFile) reload(force bool) error {
	st, err := os.Stat(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s (make one: demiurge serve token create --token-file %s)", ErrNoTokenFile, f.path, f.path)
	}
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	if !force && f.stat != nil && st.ModTime().Equal(f.stat.ModTime()) && st.Size() == f.stat.Size() {
		return nil
	}
	ts, err := readTokens(f.path)
	if err != nil {
		return err
	}
	m := make(map[string]Token, len(ts))
	for _, t := range ts {
		m[t.ID] = t
	}
	f.tokens, f.stat = m, st
	return nil
}

// Check returns the token secret is, if the file holds it (read again
// first if it changed, at most once a second). The comparison takes the
// same time whatever the secret.
func (f *TokenFile) Check(secret string) (Token, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.checked) > time.Second {
		f.checked = time.Now()
		if err := f.reload(false); err != nil {
			// A file removed or broken while the server runs: no token
			// is good until it is fixed.
			f.tokens = nil
		}
	}
	id, ok := tokenID(secret)
	if !ok {
		return Token{}, false
	}
	t, ok := f.tokens[id]
	want := hashToken(secret)
	if !ok {
		t.Hash = strings.Repeat("0", len(want)) // compare all the same
	}
	if subtle.ConstantTimeCompare([]byte(t.Hash), []byte(want)) != 1 || !ok {
		return Token{}, false
	}
	return t, true
}

// tokenID returns the id a token carries: dmt_<id>_<secret>.
func tokenID(secret string) (string, bool) {
	rest, ok := strings.CutPrefix(secret, tokenPrefix)
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, "_")
	return id, ok && id != ""
}

// hashToken is the hash a token file keeps of a token.
func hashToken(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(h[:])
}

// readTokens reads a token file.
func readTokens(path string) ([]Token, error) {
	b, err := readall.File(path, "a token file", maxTokenFile)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	var tf tokenFileJSON
	if err := json.Unmarshal(b, &tf); err != nil {
		return nil, fmt.Errorf("token file %s: %v (it is written by demiurge serve token create)", path, err)
	}
	if tf.Format != tokenFormat {
		return nil, fmt.Errorf("token file %s: format %q; want %q", path, tf.Format, tokenFormat)
	}
	for i, t := range tf.Tokens {
		if t.ID == "" || !strings.HasPrefix(t.Hash, "sha256:") || len(t.Worlds) == 0 {
			return nil, fmt.Errorf("token file %s: token %d: an id, a sha256: hash and worlds are required", path, i)
		}
	}
	return tf.Tokens, nil
}

// writeTokens writes a token file whole: a temporary file beside it,
// renamed over it, readable by its owner only.
func writeTokens(path string, ts []Token) error {
	if ts == nil {
		ts = []Token{}
	}
	b, err := json.MarshalIndent(tokenFileJSON{Format: tokenFormat, Tokens: ts}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tokens-*")
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("token file: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("token file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("token file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}

// CreateToken makes a token that may reach worlds ("*": every world),
// adds its hash to the file at path (made if need be), and returns the
// token, which nothing keeps: show it once.
func CreateToken(path, name string, worlds []string) (string, Token, error) {
	if len(worlds) == 0 {
		return "", Token{}, errors.New("name the worlds the token may reach (--world NAME, repeatable; --world '*' for every world)")
	}
	for _, w := range worlds {
		if w == "*" {
			continue
		}
		if err := journal.ValidateWorld(w); err != nil {
			return "", Token{}, err
		}
	}
	var ts []Token
	if _, err := os.Stat(path); err == nil {
		if ts, err = readTokens(path); err != nil {
			return "", Token{}, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", Token{}, fmt.Errorf("token file: %w", err)
	}
	id := make([]byte, 6)
	secret := make([]byte, 32)
	if _, err := rand.Read(id); err != nil {
		return "", Token{}, err
	}
	if _, err := rand.Read(secret); err != nil {
		return "", Token{}, err
	}
	tok := tokenPrefix + hex.EncodeToString(id) + "_" + base64.RawURLEncoding.EncodeToString(secret)
	t := Token{ID: hex.EncodeToString(id), Name: name, Hash: hashToken(tok), Worlds: slices.Clone(worlds), Created: time.Now().UTC().Truncate(time.Second)}
	if err := writeTokens(path, append(ts, t)); err != nil {
		return "", Token{}, err
	}
	return tok, t, nil
}

// ListTokens returns the tokens of the file at path (their hashes, never
// the tokens).
func ListTokens(path string) ([]Token, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoTokenFile, path)
	}
	return readTokens(path)
}

// ErrNoToken is returned (wrapped) by RevokeToken for an id the file does
// not hold.
var ErrNoToken = errors.New("serve: no such token")

// RevokeToken removes token id from the file at path: a server that reads
// it refuses the token within a second.
func RevokeToken(path, id string) (Token, error) {
	ts, err := ListTokens(path)
	if err != nil {
		return Token{}, err
	}
	i := slices.IndexFunc(ts, func(t Token) bool { return t.ID == id })
	if i < 0 {
		return Token{}, fmt.Errorf("%w: %s in %s (demiurge serve token list shows them)", ErrNoToken, id, path)
	}
	t := ts[i]
	return t, writeTokens(path, slices.Delete(ts, i, i+1))
}
