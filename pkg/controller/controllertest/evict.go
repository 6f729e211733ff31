package controllertest

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// RefuseEvictions makes client answer every eviction as the API server does when the
// PodDisruptionBudget pdb allows no disruption: 429 TooManyRequests, with the
// DisruptionBudget cause that names the budget.
func RefuseEvictions(client *fake.Clientset, pdb string) {
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type: "DisruptionBudget", Message: fmt.Sprintf("The disruption budget %s needs 1 healthy pods and has 1 currently", pdb)})
		return true, nil, err
	})
}
