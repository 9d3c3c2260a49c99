package server

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/golang-jwt/jwt/v5"

	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/state"
)

// Roles a credential can have.
const (
	roleAdmin = "admin" // everything
	roleApp   = "app"   // any user of one app
	roleUser  = "user"  // one app's one user
)

// principal is who a request is from, and what it may reach.
type principal struct {
	name      string // for rate limiting and logs; never the secret
	role      string
	app, user string
	approver  bool // may approve agents' writes to facts
}

// authenticator checks credentials. With no credentials configured every
// request is an anonymous admin: serve allows that on loopback only.
type authenticator struct {
	keys   map[[32]byte]principal // by SHA-256 of the key: the keys themselves are not kept
	jwtKey any
	jwt    *config.JWT
}

func newAuthenticator(a config.Auth) (*authenticator, error) {
	au := &authenticator{keys: map[[32]byte]principal{}, jwt: a.JWT}
	for i, k := range a.APIKeys {
		key := k.Key
		if k.KeyEnv != "" {
			key = os.Getenv(k.KeyEnv)
		}
		name := k.Name
		if name == "" {
			name = fmt.Sprintf("api_keys.%d", i)
		}
		au.keys[sha256.Sum256([]byte(key))] = principal{name: name, role: k.Role, app: k.App, user: k.User, approver: k.Approver}
	}
	if j := a.JWT; j != nil {
		if j.HS256SecretEnv != "" {
			au.jwtKey = []byte(os.Getenv(j.HS256SecretEnv))
		} else {
			block, _ := pem.Decode([]byte(j.RS256PublicKey))
			if block == nil {
				return nil, errors.New("server.auth.jwt.rs256_public_key: not a PEM block")
			}
			pub, err := x509.ParsePKIXPublicKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("server.auth.jwt.rs256_public_key: %w", err)
			}
			au.jwtKey = pub
		}
	}
	return au, nil
}

// enabled reports whether any credential is configured.
func (a *authenticator) enabled() bool { return len(a.keys) > 0 || a.jwt != nil }

// authenticate returns the request's principal, or errUnauthenticated.
func (a *authenticator) authenticate(r *http.Request) (principal, error) {
	if !a.enabled() {
		return principal{name: "anonymous", role: roleAdmin}, nil
	}
	token := r.Header.Get("X-API-Key")
	if h := r.Header.Get("Authorization"); token == "" && h != "" {
		scheme, rest, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return principal{}, errUnauthenticated
		}
		token = strings.TrimSpace(rest)
	}
	return a.authenticateToken(token)
}

// authenticateToken checks an API key or JWT given any way (a header, or a
// gateway request's user_key). An empty token is never valid, auth or not.
func (a *authenticator) authenticateToken(token string) (principal, error) {
	if token == "" {
		return principal{}, errUnauthenticated
	}
	if !a.enabled() {
		return principal{name: "anonymous", role: roleAdmin}, nil
	}
	if p, ok := a.keys[sha256.Sum256([]byte(token))]; ok {
		return p, nil
	}
	if a.jwt != nil && strings.Count(token, ".") == 2 {
		return a.verifyJWT(token)
	}
	return principal{}, errUnauthenticated
}

func (a *authenticator) verifyJWT(token string) (principal, error) {
	method := jwt.SigningMethodHS256.Alg()
	if a.jwt.RS256PublicKey != "" {
		method = jwt.SigningMethodRS256.Alg()
	}
	opts := []jwt.ParserOption{jwt.WithValidMethods([]string{method}), jwt.WithExpirationRequired()}
	if a.jwt.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(a.jwt.Issuer))
	}
	if a.jwt.Audience != "" {
		opts = append(opts, jwt.WithAudience(a.jwt.Audience))
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(token, claims, func(*jwt.Token) (any, error) { return a.jwtKey, nil }, opts...)
	if err != nil {
		return principal{}, errUnauthenticated
	}
	user, _ := claims.GetSubject()
	app, _ := claims["app"].(string)
	if app == "" {
		app = a.jwt.App
	}
	if user == "" || app == "" {
		return principal{}, errUnauthenticated
	}
	return principal{name: "jwt:" + app + "/" + user, role: roleUser, app: app, user: user}, nil
}

// may reports whether p may reach a route of the given scope with these path values.
// mayWriteState refuses a state delta with app: keys from a user's own
// credential, on every route that takes state: app state is shared by
// every user of the app, so only the app's or the admin's credential may
// write (or delete) it. user: keys always land on the request's own user,
// and temp: keys are never stored, so neither can reach another user.
func (p principal) mayWriteState(delta map[string]any) error {
	if p.role != roleUser {
		return nil
	}
	if key := state.AppKey(delta); key != "" {
		return &apiError{http.StatusForbidden, "forbidden", fmt.Sprintf(
			"state key %q is app-wide, shared by every user of the app: a user's credential may not write it (an app's or the admin's may)", key)}
	}
	return nil
}

func (p principal) may(scope scope, app, user string) bool {
	switch {
	case p.role == roleAdmin, scope == scopeCaller:
		return true
	case scope == scopeAdmin:
		return false
	case p.role == roleApp:
		return app == p.app
	case p.role == roleUser:
		return scope == scopeUser && app == p.app && user == p.user
	}
	return false
}
