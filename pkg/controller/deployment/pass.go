package deployment

import (
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// pass is what one reconcile pass of a Deployment works on: the Deployment, its
// ReplicaSets split into the new one and the old ones, and the in-place verdict on its
// change, judged once for the whole pass (the new ReplicaSet's size, the hand-over and
// the status all follow the same verdict).
type pass struct {
	d *appsv1.Deployment
	// template is the template d's new ReplicaSet has: d's own, or, with configuration
	// rollout, d's with the configuration's fingerprint (configrollout.Effective).
	template *corev1.PodTemplateSpec
	// config is what configuration rollout found this pass; zero when d is not opted in.
	config configPass
	// newRS is the ReplicaSet with d's template; nil until it is created.
	newRS *appsv1.ReplicaSet
	// oldRSs are the others, oldest first.
	oldRSs []*appsv1.ReplicaSet
	// revision is the one a new ReplicaSet gets (or an old one brought back by a
	// rollback): one above every old one.
	revision int64
	// verdict is the in-place verdict on d's change, from the templates of the old
	// ReplicaSets that still have pods; judged is false when there is none (d not opted
	// in, or no old pod left).
	verdict inplace.Verdict
	judged  bool
	// staged is the staged rollout's decision for this pass (see stage): its Partition
	// bounds the rollout; the zero Decision when d is not staged.
	staged staging.Decision
	// budgetWait is the wait of d's in-place restarts on a PodDisruptionBudget after
	// this pass (settleInPlaceBudget); the zero Wait when none holds them.
	budgetWait disruption.Wait
}

// newPass splits rsList into d's new ReplicaSet and the old ones
// (history.NewReplicaSet), and judges d's change. It writes nothing.
func newPass(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) *pass {
	return newPassFor(d, &d.Spec.Template, rsList, configPass{})
}

// newPassFor is newPass for the new ReplicaSet of template (see pass.template).
func newPassFor(d *appsv1.Deployment, template *corev1.PodTemplateSpec, rsList []*appsv1.ReplicaSet, config configPass) *pass {
	p := &pass{d: d, template: template, config: config}
	p.newRS, p.oldRSs = history.NewReplicaSetFor(template, rsList)
	p.revision = history.MaxRevision(p.oldRSs) + 1
	p.verdict, p.judged = inPlaceVerdict(d, template, p.oldRSs)
	return p
}

// all is the old ReplicaSets then the new one (nil while it does not exist).
func (p *pass) all() []*appsv1.ReplicaSet {
	return append(append([]*appsv1.ReplicaSet{}, p.oldRSs...), p.newRS)
}

// replace puts rs, as just written, in place of the ReplicaSet of its UID.
func (p *pass) replace(rs *appsv1.ReplicaSet) {
	if p.newRS != nil && p.newRS.UID == rs.UID {
		p.newRS = rs
		return
	}
	for i, old := range p.oldRSs {
		if old.UID == rs.UID {
			p.oldRSs[i] = rs
		}
	}
}

// scalingEvent tells a change of replicas alone: some ReplicaSet with pods was sized
// for a different number of replicas than d wants now.
func (p *pass) scalingEvent() bool {
	for _, rs := range rollout.Active(p.all()) {
		desired, err := strconv.ParseInt(rs.Annotations[rollout.DesiredReplicasAnnotation], 10, 32)
		if err == nil && int32(desired) != rollout.DesiredReplicas(p.d) {
			return true
		}
	}
	return false
}

// inPlaceMode is d's in-place opt-in; a Recreate Deployment never updates in place.
func inPlaceMode(d *appsv1.Deployment) inplace.Mode {
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return inplace.Off
	}
	mode, _ := inplace.ModeOf(d.Annotations)
	return mode
}

// inPlaceVerdict judges d's change against the templates of its old ReplicaSets that
// still have pods; ok is false when there is nothing to judge (not opted in, or no old
// pods).
func inPlaceVerdict(d *appsv1.Deployment, template *corev1.PodTemplateSpec, oldRSs []*appsv1.ReplicaSet) (v inplace.Verdict, ok bool) {
	mode := inPlaceMode(d)
	if mode == inplace.Off {
		// Judge has no verdict without the opt-in: the templates need not be compared.
		return inplace.Verdict{}, false
	}
	seen := map[string]bool{}
	var fields []string
	judged := false
	for _, rs := range oldRSs {
		if rs == nil || (*rs.Spec.Replicas == 0 && rs.Status.Replicas == 0) {
			continue
		}
		judged = true
		// A cpu and memory change the API's pods/resize accepts is made in place too:
		// the Deployment controller resizes each pod once it has arrived.
		for _, f := range inplace.DiffResize(&rs.Spec.Template, template, inplace.ResizeRules{}) {
			if !seen[f] {
				seen[f] = true
				fields = append(fields, f)
			}
		}
	}
	if !judged {
		return inplace.Verdict{}, false
	}
	sort.Strings(fields)
	return inplace.Judge(mode, fields)
}
