package admission

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// policyValidator compiles the embedded policy as kube-apiserver's
// ValidatingAdmissionPolicy plugin does (its CEL environment, variables, validations
// and message expressions), so the table runs through the very expressions in
// deploy/admission-policy.yaml without a cluster. e2e/admission_test.go runs the same
// table through a real API server.
func policyValidator(t *testing.T) validating.Validator {
	t.Helper()
	docs, err := documents()
	if err != nil {
		t.Fatal(err)
	}
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	if err := json.Unmarshal(docs[0], &policy); err != nil {
		t.Fatal(err)
	}
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	var variables []plugincel.NamedExpressionAccessor
	for _, v := range policy.Spec.Variables {
		variables = append(variables, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	vars := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	compiler.CompileAndStoreVariables(variables, vars, environment.StoredExpressions)
	var validations, messages []plugincel.ExpressionAccessor
	for _, v := range policy.Spec.Validations {
		validations = append(validations, &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason})
		messages = append(messages, &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression})
	}
	return validating.NewValidator(
		compiler.CompileCondition(validations, vars, environment.StoredExpressions), nil,
		compiler.CompileCondition(nil, vars, environment.StoredExpressions),
		compiler.CompileCondition(messages, plugincel.OptionalVariableDeclarations{}, environment.StoredExpressions),
		policy.Spec.FailurePolicy, nil)
}

// workload is a minimal object of kind with annotations.
func workload(kind string, annotations map[string]string) (runtime.Object, string) {
	meta := metav1.ObjectMeta{Name: "web", Namespace: "ns", Annotations: annotations}
	switch kind {
	case StatefulSet:
		return &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: kind}, ObjectMeta: meta}, "statefulsets"
	case DaemonSet:
		return &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: kind}, ObjectMeta: meta}, "daemonsets"
	default:
		return &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: kind}, ObjectMeta: meta}, "deployments"
	}
}

// denied runs a create (old nil) or an update through the policy: the refusal's
// message, or "" when the write is allowed.
func denied(t *testing.T, v validating.Validator, kind string, old, annotations map[string]string) string {
	t.Helper()
	obj, resource := workload(kind, annotations)
	var oldObj runtime.Object
	op := admission.Create
	if old != nil {
		oldObj, _ = workload(kind, old)
		op = admission.Update
	}
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: kind}
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: resource}
	attrs := admission.NewAttributesRecord(obj, oldObj, gvk, "ns", "web", gvr, "", op, nil, false, nil)
	versioned := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk, VersionedObject: obj, VersionedOldObject: oldObj}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}
	result := v.Validate(context.Background(), gvr, versioned, nil, ns, celconfig.RuntimeCELCostBudget, nil)
	var out []string
	for _, d := range result.Decisions {
		if d.Action == validating.ActionDeny {
			out = append(out, d.Message)
		}
	}
	return strings.Join(out, " | ")
}

// Every row of the table through the policy's own expressions: a valid value is
// allowed; an invalid one refused with exactly the parsers' line (Problems) — the
// controllers' condition and the API server's refusal say the same. Written again
// unchanged (an update that leaves it as it was), no value is refused.
func TestPolicyOverTheTable(t *testing.T) {
	v := policyValidator(t)
	for _, row := range Values {
		for _, kind := range row.KindsOf() {
			ann := row.Annotations()
			name := kind + " " + row.Key + "=" + strconv.Quote(row.Value)
			got := denied(t, v, kind, nil, ann)
			want := strings.Join(Problems(kind, ann), "; ")
			if got != want {
				t.Errorf("%s: the policy says %q, the parsers %q", name, got, want)
			}
			if got := denied(t, v, kind, ann, ann); got != "" {
				t.Errorf("%s: refused on an update that leaves it unchanged: %q", name, got)
			}
		}
	}
}

// Several bad settings written at once: one refusal listing each, in the parsers'
// order, as the controllers' problems do.
func TestPolicyListsEveryBadSetting(t *testing.T) {
	ann := map[string]string{"kroll.dev/on-failure": "Sometimes", "kroll.dev/failure-threshold": "abc", "kroll.dev/rollout-steps": "10%, wait"}
	want := strings.Join(Problems(Deployment, ann), "; ")
	if strings.Count(want, "is not valid") != 3 {
		t.Fatalf("the parsers found %q, want three problems", want)
	}
	if got := denied(t, policyValidator(t), Deployment, nil, ann); got != want {
		t.Errorf("the policy says\n  %q\nthe parsers\n  %q", got, want)
	}
}

// Where the policy cannot give the parsers' exact line (deploy/README.md): a control
// character other than \a \b \f \n \r \t \v, which Go quotes as \x01 and CEL's
// strings.quote leaves as it is. The value is still refused, with the same words.
func TestPolicyQuotingDifference(t *testing.T) {
	ann := map[string]string{"kroll.dev/on-failure": "Roll\x01back"}
	want := strings.Join(Problems(Deployment, ann), "; ")
	got := denied(t, policyValidator(t), Deployment, nil, ann)
	if got == "" || got == want || !strings.HasSuffix(got, "is not valid: want Rollback, Pause or None") {
		t.Errorf("the policy says %q; want a refusal that differs from the parsers' %q only in quoting", got, want)
	}
}
