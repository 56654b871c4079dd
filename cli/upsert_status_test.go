package cli

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
)

// TestUpsertDoesNotRevive (#28 point 5, Done-when): against a service that makes a person
// active on a create/update without a status, `subscribers upsert` of a person who
// unsubscribed (known only to the service: subsync reads the list first) without --status
// leaves them unsubscribed and says so, and so for a bounce; only --status active re-activates,
// and the command says whom; a new person is created active.
func TestUpsertDoesNotRevive(t *testing.T) {
	t.Parallel()
	h := setup(t, "", sinktest.WithOmissionRevives(true))
	list := h.srv.CreateList("Members")
	ls := fmt.Sprint(list)
	h.ok("subscribers", "upsert", "--list", ls, "--email", "ada@example.com")
	h.ok("subscribers", "upsert", "--list", ls, "--email", "bob@example.com")
	require.NoError(t, h.srv.SetStatus("ada@example.com", list, sink.StatusUnsubscribed))
	require.NoError(t, h.srv.SetStatus("bob@example.com", list, sink.StatusBounce))
	status := func(email string) string {
		s, ok := h.srv.SubscriberByEmail(email)
		require.True(t, ok, email)
		return s.Lists[list].Status
	}

	r := h.run("", "subscribers", "upsert", "--list", ls, "--email", "ada@example.com", "--firstname", "Ada")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Equal(t, sink.StatusUnsubscribed, status("ada@example.com"), "an upsert without --status revived ada")
	s, _ := h.srv.SubscriberByEmail("ada@example.com")
	require.Equal(t, "Ada", s.Fields["firstname"])
	require.Contains(t, r.stderr, "ada@example.com is unsubscribed: sent as unsubscribed, not re-activated (--status active re-activates)")

	r = h.run("", "subscribers", "upsert", "--list", ls, "--email", "bob@example.com", "--json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Equal(t, sink.StatusBounce, status("bob@example.com"))
	require.Equal(t, sink.StatusBounce, decode[map[string]any](t, r.stdout)["status"])

	r = h.run("", "subscribers", "upsert", "--list", ls, "--email", "ada@example.com", "--status", "active")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Equal(t, sink.StatusActive, status("ada@example.com"))
	require.Contains(t, r.stderr, "re-activates ada@example.com (was unsubscribed), as --status active asks")
	// Re-activated on purpose: a later upsert without --status leaves her active.
	r = h.run("", "subscribers", "upsert", "--list", ls, "--email", "ada@example.com", "--lastname", "Lovelace")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Equal(t, sink.StatusActive, status("ada@example.com"))
	require.NotContains(t, r.stderr, "sent as")

	h.ok("subscribers", "upsert", "--list", ls, "--email", "carol@example.com")
	require.Equal(t, sink.StatusActive, status("carol@example.com"))
}
