package sink

import "context"

// gateKey is the context key of a call's gate.
type gateKey struct{}

// WithGate returns a context whose calls ask gate before each HTTP attempt, the first and
// every retry (after any wait for the rate limiter, a slot or a Retry-After): an error from
// gate ends the call with that error, the attempt unsent. A worker gates its sends on its
// lease, so that a worker that was paused (SIGSTOP, a frozen VM) past its lease sends nothing
// more once it runs again.
func WithGate(ctx context.Context, gate func(context.Context) error) context.Context {
	return context.WithValue(ctx, gateKey{}, gate)
}

// passGate asks the context's gate, if it has one.
func passGate(ctx context.Context) error {
	if gate, ok := ctx.Value(gateKey{}).(func(context.Context) error); ok {
		return gate(ctx)
	}
	return nil
}
