package dashboard

import (
	"context"
	"fmt"
	"net/http"

	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
)

// logClient is the client r's user follows pod's log in ns with. Locally, the
// user's own (the kubeconfig's). In-cluster, the dashboard's own client, once a
// SubjectAccessReview says that the user may get that pod's pods/log: the cluster's
// RBAC decides, as for an action, and the dashboard needs no impersonation to show a
// log (a read-only dashboard's account has none, and may only read and review).
func (s *Server) logClient(r *http.Request, ns, pod string) (kubernetes.Interface, error) {
	if !s.opts.InCluster {
		return s.clientFor(r)
	}
	u := identityOf(r).user
	if err := mayReadLog(r.Context(), s.opts.Client, u, ns, pod); err != nil {
		return nil, err
	}
	return s.opts.Client, nil
}

// mayReadLog asks the API server whether u may get pods/log of pod in ns; a refusal is
// the error the API server gives for the request itself ("pods "web-1" is forbidden:
// User "dev" cannot get resource "pods/log" in API group "" in the namespace "web"").
func mayReadLog(ctx context.Context, client kubernetes.Interface, u User, ns, pod string) error {
	if u.Name == "" {
		return fmt.Errorf("no user to read the log of pod %s/%s as", ns, pod)
	}
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = v
	}
	review, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: u.Name, UID: u.UID, Groups: u.Groups, Extra: extra,
		ResourceAttributes: &authzv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "pods", Subresource: "log", Name: pod},
	}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("asking whether %s may read the log of pod %s/%s: %w", u.Name, ns, pod, err)
	}
	if review.Status.Allowed {
		return nil
	}
	reason := fmt.Sprintf("User %q cannot get resource \"pods/log\" in API group \"\" in the namespace %q", u.Name, ns)
	if review.Status.Reason != "" {
		reason += ": " + review.Status.Reason
	}
	return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, pod, fmt.Errorf("%s", reason))
}
