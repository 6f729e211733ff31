package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/kroll-dev/kroll/pkg/admission"
)

// admissionPolicy installs kroll's ValidatingAdmissionPolicy (deploy/admission-policy.yaml),
// or with NoAdmissionPolicy removes one an earlier start on the same data dir installed;
// it runs once the API server is ready, before any controller, so no workload is
// written before the policy exists.
func (c *Cluster) admissionPolicy(ctx context.Context) error {
	install := admission.Install
	if c.cfg.NoAdmissionPolicy {
		install = admission.Uninstall
	}
	err := install(ctx, c.Client)
	if err != nil {
		return fmt.Errorf("kroll's admission policy: %w", err)
	}
	return nil
}

// admissionPolicyEnforced waits until the API server applies the policy, so that a
// cluster reported ready refuses bad settings from the first write.
func (c *Cluster) admissionPolicyEnforced(ctx context.Context) error {
	if c.cfg.NoAdmissionPolicy {
		return nil
	}
	return admission.WaitEnforced(ctx, c.Client, "default", time.Minute)
}
