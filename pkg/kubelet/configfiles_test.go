package kubelet

import (
	"reflect"
	"strings"
	"testing"

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
