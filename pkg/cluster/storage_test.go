package cluster

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestEnsureStorageRBAC_bindsTheProvisionerAndRefreshesItsRole(t *testing.T) {
	// A role left by an older kroll with fewer permissions.
	old := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: storageRole},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"persistentvolumes"}, Verbs: []string{"get"}}}}
	client := fake.NewClientset(old)
	for i := 0; i < 2; i++ { // a resumed cluster runs it again
		if err := ensureStorageRBAC(context.Background(), client); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	role, err := client.RbacV1().ClusterRoles().Get(context.Background(), storageRole, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(role.Rules) != 5 || role.Rules[0].Verbs[len(role.Rules[0].Verbs)-1] != "delete" {
		t.Errorf("role rules not brought up to date: %+v", role.Rules)
	}
	binding, err := client.RbacV1().ClusterRoleBindings().Get(context.Background(), storageRole, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := binding.Subjects; len(s) != 1 || s[0].Kind != rbacv1.UserKind || s[0].Name != identityStorage.cn || binding.RoleRef.Name != storageRole {
		t.Errorf("binding %+v", binding)
	}
	if len(identityStorage.orgs) != 0 {
		t.Errorf("the provisioner's identity is in groups %v; it should hold only its role", identityStorage.orgs)
	}
}
