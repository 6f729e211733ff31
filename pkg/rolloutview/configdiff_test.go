package rolloutview

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/configrollout"
)

// configRevisions are revisions 1 and 2 of web, made by configuration rollout: the
// template unchanged, app-config's greeting and logo changed, db's password changed
// and its user not, tls unchanged, flags referenced by revision 2 only.
func configRevisions() (map[int64]Revision, ConfigObjects) {
	rs := func(n, hash string, snaps configrollout.Snapshots) *appsv1.ReplicaSet {
		r := newReplicaSet(newDeployment(3, "nginx:1.25", "2"), hash, "nginx:1.25", n, 3, 3, 0)
		r.Annotations[configrollout.SnapshotsAnnotation] = snaps.String()
		r.Spec.Template.Annotations = map[string]string{configrollout.HashAnnotation: "fp" + n}
		return r
	}
	snap := func(name, hash string) configrollout.Snapshot { return configrollout.Snapshot{Name: name, Hash: hash} }
	one := rs("1", "aaa", configrollout.Snapshots{
		"configmap/app-config": snap("app-config-aaa", "c1"), "secret/db": snap("db-aaa", "s1"), "secret/tls": snap("tls-aaa", "t1")})
	two := rs("2", "bbb", configrollout.Snapshots{
		"configmap/app-config": snap("app-config-bbb", "c2"), "configmap/flags": snap("flags-bbb", "f1"),
		"secret/db": snap("db-bbb", "s2"), "secret/tls": snap("tls-bbb", "t1")})
	revs, err := RevisionsOf(Snapshot{Object: newDeployment(3, "nginx:1.25", "2"), ReplicaSets: []*appsv1.ReplicaSet{one, two}})
	if err != nil {
		panic(err)
	}
	cm := func(data map[string]string, bin map[string][]byte) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Data: data, BinaryData: bin}
	}
	secret := func(data map[string]string) *corev1.Secret {
		s := &corev1.Secret{Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	objs := ConfigObjects{
		ConfigMaps: map[string]*corev1.ConfigMap{
			"app-config-aaa": cm(map[string]string{"greeting": "hello", "huge": strings.Repeat("a", 20000), "app.conf": "port = 80\nmode = good\nlog = info\n", "gone": "x"}, map[string][]byte{"logo.png": make([]byte, 1024)}),
			"app-config-bbb": cm(map[string]string{"greeting": "hello", "huge": strings.Repeat("b", 20000), "app.conf": "port = 80\nmode = bad\nlog = info\n", "new": "y"}, map[string][]byte{"logo.png": make([]byte, 2048)}),
		},
		Secrets: map[string]*corev1.Secret{
			"db-aaa": secret(map[string]string{"user": "admin", "password": "hunter2"}),
			"db-bbb": secret(map[string]string{"user": "admin", "password": "correct horse", "token": "t"}),
		},
	}
	return revs, objs
}

func TestConfigDiff(t *testing.T) {
	revs, objs := configRevisions()
	if diff, err := TemplateDiff(revs[1], revs[2]); err != nil || diff != "" {
		t.Errorf("the templates differ only in kroll.dev/config-hash, yet TemplateDiff shows:\n%s", diff)
	}
	got := ConfigDiff(revs[1], revs[2], objs)
	golden(t, "configdiff-1-2.txt", got)
	for _, secret := range []string{"hunter2", "correct horse", "admin"} {
		if strings.Contains(got, secret) {
			t.Errorf("the diff shows the Secret value %q:\n%s", secret, got)
		}
	}
	if same := ConfigDiff(revs[2], revs[2], objs); same != "" {
		t.Errorf("a revision against itself:\n%s", same)
	}
	if none := ConfigDiff(Revision{Number: 1}, Revision{Number: 2}, objs); none != "" {
		t.Errorf("revisions without configuration rollout:\n%s", none)
	}
	cms, secrets := SnapshotNames(revs[1], revs[2])
	if strings.Join(cms, ",") != "app-config-aaa,app-config-bbb,flags-bbb" || strings.Join(secrets, ",") != "db-aaa,db-bbb,tls-aaa,tls-bbb" {
		t.Errorf("SnapshotNames = %v %v", cms, secrets)
	}

	// Revision 1's snapshots pruned, revision 2's db unreadable.
	delete(objs.ConfigMaps, "app-config-aaa")
	delete(objs.Secrets, "db-bbb")
	objs.Unreadable = map[string]string{"db-bbb": "forbidden"}
	golden(t, "configdiff-gone.txt", ConfigDiff(revs[1], revs[2], objs))
}
