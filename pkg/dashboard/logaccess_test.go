package dashboard

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Given an in-cluster dashboard whose own account may read logs and review access but
// not impersonate, when dev (allowed pods/log in web) and viewer (not) follow a pod's
// log, then dev's log is read with the dashboard's client after a review naming dev
// and that pod's log, and viewer is shown the API server's refusal; no log is read
// through impersonation.
func TestInClusterLogIsReadUnderTheUsersRBAC(t *testing.T) {
	impersonated := 0
	h := newHarness(t, func(o *Options) {
		o.InCluster, o.Token, o.ReadOnly = true, "", true
		o.ClientFor = func(User) (kubernetes.Interface, error) {
			impersonated++
			return fake.NewClientset(), nil
		}
	}, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "front-1"}})
	h.client.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := strings.TrimSuffix(a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview).Spec.Token, "-token")
		return true, &authnv1.TokenReview{Status: authnv1.TokenReviewStatus{Authenticated: true,
			User: authnv1.UserInfo{Username: name, Groups: []string{name + "s"}, Extra: map[string]authnv1.ExtraValue{"scopes": {"logs"}}}}}, nil
	})
	var reviews []authzv1.SubjectAccessReviewSpec
	h.client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		spec := a.(k8stesting.CreateAction).GetObject().(*authzv1.SubjectAccessReview).Spec
		reviews = append(reviews, spec)
		allowed := spec.User == "dev" && spec.ResourceAttributes.Namespace == "web"
		return true, &authzv1.SubjectAccessReview{Status: authzv1.SubjectAccessReviewStatus{Allowed: allowed}}, nil
	})
	follow := func(user string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.http.URL+"/live/logs/web/front-1?container=app", nil)
		req.Header.Set("Authorization", "Bearer "+user+"-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				return line // the first line: the log's, or the refusal
			}
		}
		return ""
	}
	if got := follow("dev"); !strings.Contains(got, `class="log-line">fake logs<`) {
		t.Errorf("dev's log stream starts %q, want the pod's log", got)
	}
	want := `pods &#34;front-1&#34; is forbidden: User &#34;viewer&#34; cannot get resource &#34;pods/log&#34; in API group &#34;&#34; in the namespace &#34;web&#34;`
	if got := follow("viewer"); !strings.Contains(got, want) {
		t.Errorf("viewer's log stream starts %q, want the refusal %q", got, want)
	}
	if len(reviews) != 2 {
		t.Fatalf("%d access reviews, want one per stream", len(reviews))
	}
	dev := reviews[0]
	if dev.User != "dev" || strings.Join(dev.Groups, ",") != "devs" || strings.Join(dev.Extra["scopes"], ",") != "logs" ||
		*dev.ResourceAttributes != (authzv1.ResourceAttributes{Namespace: "web", Verb: "get", Resource: "pods", Subresource: "log", Name: "front-1"}) {
		t.Errorf("dev's review: %+v %+v, want dev (devs, scopes=logs) getting pods/log of web/front-1", dev, *dev.ResourceAttributes)
	}
	if impersonated != 0 {
		t.Errorf("%d clients impersonating a user were made for logs, want none", impersonated)
	}
}
