package chaos

import (
	"context"
	"fmt"
	"strings"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/linearcheck"
)

// setPrefix starts the name of every service the set workload adds.
const setPrefix = "set-"

// setClient adds tiny services, each under a name no other add uses.
type setClient struct {
	*worker
	seq int
}

func (c *setClient) op(ctx context.Context) bool {
	c.seq++
	name := fmt.Sprintf("%s%d-%d", setPrefix, c.id, c.seq)
	p := c.rec.Invoke(c.id, "add", linearcheck.SetAdd{Element: name})
	_, err := c.control.CreateService(ctx, &api.CreateServiceRequest{Spec: &api.ServiceSpec{Name: name, Image: "busybox"}})
	p.DoneErr(nil, err)
	if err == nil {
		c.acked.Add(1)
	}
	return err == nil
}

// readSet lists the set's elements through control, linearizably, page by
// page. A name listed twice is kept twice: the checker reports it.
func readSet(ctx context.Context, control api.ControlServiceClient) ([]string, error) {
	var names []string
	token := ""
	for {
		resp, err := control.ListServices(ctx, &api.ListServicesRequest{
			PageToken: token, Consistency: api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE})
		if err != nil {
			return nil, fmt.Errorf("list services: %w", err)
		}
		for _, s := range resp.Services {
			if n := s.GetSpec().GetName(); strings.HasPrefix(n, setPrefix) {
				names = append(names, n)
			}
		}
		if token = resp.NextPageToken; token == "" {
			return names, nil
		}
	}
}
