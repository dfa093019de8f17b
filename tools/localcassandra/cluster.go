package localcassandra

import (
	"context"
	"fmt"
	"time"
)

// StartCluster starts the nodes one after the other (Cassandra does not like
// several joining at once) and returns when every node sees all the others,
// or with an error when one does not two minutes after the last started.
func (l *Launcher) StartCluster(ctx context.Context, nodes []Node) error {
	for _, n := range nodes {
		if err := l.Start(ctx, n); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok := true
		for _, n := range nodes {
			peers, err := PeerCount(ctx, n.Address)
			if err != nil || peers != len(nodes)-1 {
				ok = false
				if time.Now().After(deadline) {
					return fmt.Errorf("%s sees %d of %d peers (%v) after two minutes", n.Name, peers, len(nodes)-1, err)
				}
				break
			}
		}
		if ok {
			l.logf("cluster of %d nodes is up; each sees the others", len(nodes))
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
