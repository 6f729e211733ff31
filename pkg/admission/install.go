// Package admission holds kroll's ValidatingAdmissionPolicy (deploy/admission-policy.yaml):
// how it is installed, the messages it must give (the controllers' own, Problems) and the
// table of valid and invalid settings that the parsers' tests and the policy's test share.
package admission

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kroll-dev/kroll/deploy"
	"github.com/kroll-dev/kroll/pkg/failure"
)

// The policy's names, and the namespace label that opts a namespace out of it.
const (
	PolicyName = "kroll-settings"
	// OptOutLabel with the value OptOutValue on a namespace exempts its workloads: the
	// binding selects only namespaces without it.
	OptOutLabel = "kroll.dev/admission-policy"
	OptOutValue = "off"
)

// documents splits the embedded file into its JSON documents: the policy, then the binding.
func documents() ([][]byte, error) {
	var docs [][]byte
	for _, part := range bytes.Split(deploy.AdmissionPolicy, []byte("\n---\n")) {
		j, err := yaml.YAMLToJSON(part)
		if err != nil {
			return nil, fmt.Errorf("deploy/admission-policy.yaml: %w", err)
		}
		docs = append(docs, j)
	}
	if len(docs) != 2 {
		return nil, fmt.Errorf("deploy/admission-policy.yaml: %d documents, want the policy and its binding", len(docs))
	}
	return docs, nil
}

// Install applies the policy and its binding (server-side apply, field manager "kroll",
// forced: the file is the policy's one source), creating or updating them.
func Install(ctx context.Context, client kubernetes.Interface) error {
	docs, err := documents()
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{FieldManager: "kroll", Force: ptr.To(true)}
	api := client.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Patch(ctx, PolicyName, types.ApplyPatchType, docs[0], opts); err != nil {
		return fmt.Errorf("install ValidatingAdmissionPolicy %s: %w", PolicyName, err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Patch(ctx, PolicyName, types.ApplyPatchType, docs[1], opts); err != nil {
		return fmt.Errorf("install ValidatingAdmissionPolicyBinding %s: %w", PolicyName, err)
	}
	return nil
}

// Uninstall deletes the policy and its binding; absent ones are no error.
func Uninstall(ctx context.Context, client kubernetes.Interface) error {
	api := client.AdmissionregistrationV1()
	if err := api.ValidatingAdmissionPolicyBindings().Delete(ctx, PolicyName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ValidatingAdmissionPolicyBinding %s: %w", PolicyName, err)
	}
	if err := api.ValidatingAdmissionPolicies().Delete(ctx, PolicyName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ValidatingAdmissionPolicy %s: %w", PolicyName, err)
	}
	return nil
}

// WaitEnforced returns once the API server refuses a bad setting in namespace: the
// server loads a new policy asynchronously, a few hundred milliseconds after Install.
// It asks with a dry-run create (nothing is stored) every 100 ms until timeout; a
// namespace opted out of the policy is not asked.
func WaitEnforced(ctx context.Context, client kubernetes.Interface, namespace string, timeout time.Duration) error {
	probe := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "kroll-admission-probe", Namespace: namespace,
			Annotations: map[string]string{failure.OnFailureAnnotation: "probe"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "probe"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "probe"}}},
			},
		},
	}
	if ns, err := client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{}); err == nil && ns.Labels[OptOutLabel] == OptOutValue {
		return nil // opted out: nothing to probe with there
	}
	deadline := time.Now().Add(timeout)
	for {
		_, err := client.AppsV1().Deployments(namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsInvalid(err) {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			if err == nil {
				err = errors.New("a bad setting is still accepted")
			}
			return fmt.Errorf("ValidatingAdmissionPolicy %s not enforced within %s: %w", PolicyName, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
