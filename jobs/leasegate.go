package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/subsync/subsync/state"
)

// A worker sends to the service only while it holds its run's lease. The heartbeat renews the
// lease every third of its TTL, but a worker paused past its lease (SIGSTOP, a frozen VM) wakes
// with every timer due at once: a request waiting out a Retry-After would go before the
// heartbeat finds the lease lost. So each attempt of a request a run makes passes the lease
// gate first (sink.WithGate): unless the lease was renewed less than half a TTL ago, the gate
// renews it itself, and a lease another worker took ends the attempt unsent.

// setRenewed records that the lease was renewed by a request made at asked.
func (a *attempt) setRenewed(asked time.Time) {
	a.leaseMu.Lock()
	defer a.leaseMu.Unlock()
	if asked.After(a.renewed) {
		a.renewed = asked
	}
}

// leaseGate lets a request to the service go while the attempt holds its lease.
func (a *attempt) leaseGate(ctx context.Context) error {
	ttl := a.rt.cfg.LeaseTTL
	a.leaseMu.Lock()
	fresh := time.Since(a.renewed) < ttl/2
	a.leaseMu.Unlock()
	if fresh {
		return nil
	}
	asked := time.Now()
	err := a.rt.store.RenewLease(ctx, a.run.ID, a.owner, ttl)
	switch {
	case errors.Is(err, state.ErrLeaseLost):
		a.cancel(errLeaseLost)
		return fmt.Errorf("not sending: %w", errLeaseLost)
	case err != nil:
		return fmt.Errorf("not sending: the run's lease could not be renewed: %w", err)
	}
	a.setRenewed(asked)
	return nil
}
