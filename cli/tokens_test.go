package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/state"
)

// TestTokensCommand: tokens create prints the token alone (or with --json its name and
// value), never in the log; ls lists names and access, never a token; revoke marks it
// revoked; a name in use is refused, a bad name is a usage error.
func TestTokensCommand(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	r := h.run("", "tokens", "create", "crm")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Regexp(t, `^`+regexp.QuoteMeta(state.TokenPrefix)+`[A-Za-z0-9_-]{43}\n$`, r.stdout, "the token alone on standard output")
	token := strings.TrimSpace(r.stdout)
	require.NotContains(t, r.stderr, token, "never in the log")

	ro := decode[tokenJSON](t, h.ok("tokens", "create", "dashboard", "--read-only", "--json"))
	require.Equal(t, "dashboard", ro.Name)
	require.True(t, ro.ReadOnly)
	require.True(t, strings.HasPrefix(ro.Token, state.TokenPrefix))

	r = h.run("", "tokens", "create", "crm")
	require.Equal(t, ExitFailure, r.code)
	require.Contains(t, r.stderr, `token "crm": a token with that name exists (subsync tokens revoke crm first`)
	r = h.run("", "tokens", "create", "no good")
	require.Equal(t, ExitUsage, r.code)

	ls := h.ok("tokens", "ls")
	require.Regexp(t, `(?m)^crm +read-write +\d{4}-`, ls)
	require.Regexp(t, `(?m)^dashboard +read-only +\d{4}-`, ls)
	require.NotContains(t, ls, token)
	require.NotContains(t, ls, ro.Token)

	h.ok("tokens", "revoke", "crm")
	list := decode[[]tokenInfoJSON](t, h.ok("tokens", "ls", "--json"))
	require.Len(t, list, 2)
	require.Equal(t, "crm", list[0].Name)
	require.NotNil(t, list[0].RevokedAt)
	require.Nil(t, list[1].RevokedAt)
	r = h.run("", "tokens", "revoke", "crm")
	require.Equal(t, ExitFailure, r.code)
	require.Contains(t, r.stderr, `token "crm": no such token in use`)
}
