package kubelet

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	corelisters "k8s.io/client-go/listers/core/v1"
)

func TestContainerConfigReadsConfigMapsAndSecrets(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = idx.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string]string{"greeting": "hello", "mode": "a"},
		BinaryData: map[string][]byte{"blob": {'x', 0}}})
	sidx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = sidx.Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"password": []byte("s3cret")}})
	look := configLookup{configMaps: corelisters.NewConfigMapLister(idx), secrets: corelisters.NewSecretLister(sidx)}
	yes := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{
			{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}},
			{Name: "one", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"},
				Items: []corev1.KeyToPath{{Key: "mode", Path: "conf/mode.txt"}}}}},
			{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Optional: &yes}}}}}},
		},
		Containers: []corev1.Container{{Name: "app",
			EnvFrom: []corev1.EnvFromSource{{Prefix: "APP_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}},
			Env: []corev1.EnvVar{{Name: "PLAIN", Value: "1"}, {Name: "APP_mode", Value: "overridden"},
				{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "greeting"}}},
				{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
				{Name: "NOKEY", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "absent"}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}, {Name: "one", MountPath: "/etc/one"},
				{Name: "proj", MountPath: "/secrets"}, {Name: "cfg", MountPath: "/greeting.txt", SubPath: "greeting"}},
		}},
	}}
	env, files := containerConfig(pod, &pod.Spec.Containers[0], look)
	wantEnv := map[string]string{"APP_greeting": "hello", "APP_mode": "overridden", "APP_blob": "x\x00", "PLAIN": "1", "GREETING": "hello", "PASSWORD": "s3cret"}
	if !reflect.DeepEqual(env, wantEnv) {
		t.Errorf("env = %q, want %q", env, wantEnv)
	}
	wantFiles := map[string]string{"/etc/app/greeting": "hello", "/etc/app/mode": "a", "/etc/app/blob": "x\x00", "/etc/one/conf/mode.txt": "a",
		"/secrets/password": "s3cret", "/greeting.txt": "hello"}
	if !reflect.DeepEqual(files, wantFiles) {
		t.Errorf("files = %q, want %q", files, wantFiles)
	}
	// The run's instance holds them: what `kubectl exec cat` reads.
	r := newRun(pod, pod.Spec.Containers[0], "id", "", t0, t0, look, Fault{})
	if got, ok := r.inst.FS().Read("/etc/app/greeting"); !ok || got != "hello" {
		t.Errorf("instance file = %q %v", got, ok)
	}
}

func TestMountFailuresNameAMissingConfigMapOrSecret(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = idx.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "here"}})
	look := volumeLookup{config: configLookup{configMaps: corelisters.NewConfigMapLister(idx),
		secrets: corelisters.NewSecretLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))}}
	yes := true
	pod := func(vs ...corev1.Volume) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: corev1.PodSpec{Volumes: vs, Containers: []corev1.Container{{Name: "a"}}}}
		for _, v := range vs {
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: "/" + v.Name})
		}
		return p
	}
	cm := func(vol, name string, optional bool) corev1.Volume {
		return corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Optional: &optional}}}
	}
	secret := corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}}}}
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"present: mounts":          {pod(cm("c", "here", false)), ""},
		"missing but optional":     {pod(cm("c", "gone", yes)), ""},
		"missing configmap: held":  {pod(cm("c", "gone", false)), `MountVolume.SetUp failed for volume "c" : configmap "gone" not found`},
		"missing projected secret": {pod(secret), `MountVolume.SetUp failed for volume "s" : secret "creds" not found`},
	} {
		t.Run(name, func(t *testing.T) {
			got := strings.Join(mountFailures(tc.pod, nil, look), " | ")
			if got != tc.want {
				t.Errorf("mountFailures = %q, want %q", got, tc.want)
			}
			if !usesClaims(tc.pod) {
				t.Errorf("the gate does not look at a pod that mounts configuration")
			}
		})
	}
}

func TestEnvConfigError_theKubeletsFirstProblemInItsWords(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = idx.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string]string{"greeting": "hello"}})
	sidx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = sidx.Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"password": []byte("s3cret")}})
	look := configLookup{configMaps: corelisters.NewConfigMapLister(idx), secrets: corelisters.NewSecretLister(sidx)}
	yes := true
	cmKey := func(name, key string, optional *bool) corev1.EnvVar {
		return corev1.EnvVar{Name: "V", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}}
	}
	secretKey := func(name, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}}
	}
	cases := []struct {
		name    string
		envFrom []corev1.EnvFromSource
		env     []corev1.EnvVar
		look    configLookup
		want    string
	}{
		{name: "every reference resolves", env: []corev1.EnvVar{{Name: "P", Value: "1"}, cmKey("app", "greeting", nil), secretKey("creds", "password")}, look: look},
		{name: "a missing key", env: []corev1.EnvVar{cmKey("app", "absent", nil)}, look: look, want: "couldn't find key absent in ConfigMap ns/app"},
		{name: "a missing ConfigMap", env: []corev1.EnvVar{cmKey("gone", "k", nil)}, look: look, want: `configmap "gone" not found`},
		{name: "optional: left unset", env: []corev1.EnvVar{cmKey("gone", "k", &yes), cmKey("app", "absent", &yes)}, look: look},
		{name: "a missing Secret key", env: []corev1.EnvVar{secretKey("creds", "token")}, look: look, want: "couldn't find key token in Secret ns/creds"},
		{name: "a missing Secret", env: []corev1.EnvVar{secretKey("vault", "token")}, look: look, want: `secret "vault" not found`},
		{name: "envFrom comes first", env: []corev1.EnvVar{cmKey("app", "absent", nil)},
			envFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vault"}}}},
			look:    look, want: `secret "vault" not found`},
		{name: "envFrom optional", envFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Optional: &yes}}}, look: look},
		{name: "no caches: cannot tell", env: []corev1.EnvVar{cmKey("gone", "k", nil)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", EnvFrom: tc.envFrom, Env: tc.env}}}}
			if got := envConfigError(pod, &pod.Spec.Containers[0], tc.look); got != tc.want {
				t.Errorf("envConfigError = %q, want %q", got, tc.want)
			}
		})
	}
}

// A container whose environment names a key that does not exist yet waits in
// CreateContainerConfigError, tried again every 10 s, and starts once the key is there.
func TestPodStatus_createContainerConfigErrorUntilTheKeyExists(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = idx.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"}, Data: map[string]string{}})
	sim := newSimulator(t)
	sim.config = configLookup{configMaps: corelisters.NewConfigMapLister(idx), secrets: corelisters.NewSecretLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))}
	pod := newPod("app:1")
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "mode"}}}}
	const s = time.Second
	runSteps(t, sim, pod, []step{
		{at: 0, phase: corev1.PodPending, reason: reasonContainerCreating, wake: 500 * time.Millisecond},
		{at: 500 * time.Millisecond, phase: corev1.PodPending, reason: reasonCreateContainerConfigError, wake: 10*s + 500*time.Millisecond},
		{at: 10*s + 500*time.Millisecond, phase: corev1.PodPending, reason: reasonCreateContainerConfigError, wake: 20*s + 500*time.Millisecond},
		{at: 12 * s, edit: func(*corev1.Pod) {
			_ = idx.Update(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"}, Data: map[string]string{"mode": "a"}})
		}, phase: corev1.PodRunning, reason: "Running", ready: true},
	})
	if w := pod.Status.ContainerStatuses[0]; w.RestartCount != 0 || w.State.Running == nil {
		t.Errorf("after the key appeared: %+v, want a first instance running", w.State)
	}
}

func TestContainerEvents_createContainerConfigError(t *testing.T) {
	pod := newPod("app:1")
	c := &pod.Spec.Containers[0]
	creating := waitingStatus(c.Name, c.Image, reasonContainerCreating, "", nil)
	failed := waitingStatus(c.Name, c.Image, reasonCreateContainerConfigError, "couldn't find key mode in ConfigMap default/app", nil)
	present := map[string]bool{}
	var got []string
	for _, e := range containerEvents(pod, c, &creating, &failed, present, time.Second) {
		got = append(got, e.reason+": "+e.message)
	}
	want := []string{`Pulling: Pulling image "app:1"`, `Pulled: Successfully pulled image "app:1" in 1s (1s including waiting). Image size: ` + fmt.Sprint(imageSize(normalizeImage("app:1"))) + ` bytes.`,
		"Failed: Error: couldn't find key mode in ConfigMap default/app"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events = %q\nwant %q", got, want)
	}
	if again := containerEvents(pod, c, &failed, &failed, present, time.Second); len(again) != 0 {
		t.Errorf("a status that does not change posted %d events", len(again))
	}
}
