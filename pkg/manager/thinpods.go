package manager

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// The informers' pods are decoded thin: of a pod's protobuf encoding, only the fields
// the slim transform keeps (see slimPod) become Go values; the rest (managedFields,
// the service account token's projected volume, tolerations, the pod's IPs, each
// container's environment, probes and mounts, each container status's last state) are
// skipped on the wire instead of being decoded, allocated and dropped. Every pod event
// the controllers watch is decoded, so this is most of what a watch costs them.
//
// The rule that keeps this honest: slimPod of a thin pod equals slimPod of the whole
// pod, for any pod (TestThinPodSlimsAsTheWholePod). A field slimPod comes to keep is
// kept here too.

// usePodsDecodedThin makes factory's pod informer list and watch through a client that
// decodes pods thin. It must run before anything asks factory for its pod informer.
func usePodsDecodedThin(factory informers.SharedInformerFactory, cfg *rest.Config, client kubernetes.Interface) error {
	c := rest.CopyConfig(cfg)
	gv := corev1.SchemeGroupVersion
	c.GroupVersion, c.APIPath = &gv, "/api"
	c.NegotiatedSerializer = newThinPodCodecs(rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion())
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return err
	}
	thin := withCoreV1{Interface: client, core: typedcorev1.New(rc)}
	factory.InformerFor(&corev1.Pod{}, func(_ kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(thin, metav1.NamespaceAll, resync,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil)
	})
	return nil
}

// withCoreV1 is a clientset whose core/v1 client is core.
type withCoreV1 struct {
	kubernetes.Interface
	core typedcorev1.CoreV1Interface
}

func (c withCoreV1) CoreV1() typedcorev1.CoreV1Interface { return c.core }

// thinPodCodecs are codecs whose protobuf decoder decodes pods thin. The client asks
// for the media types at every response it decodes, so they are made once.
type thinPodCodecs struct {
	runtime.NegotiatedSerializer
	infos []runtime.SerializerInfo
}

func newThinPodCodecs(codecs runtime.NegotiatedSerializer) thinPodCodecs {
	infos := slices.Clone(codecs.SupportedMediaTypes())
	for i := range infos {
		if infos[i].MediaType == runtime.ContentTypeProtobuf {
			infos[i].Serializer = thinPodDecoder{infos[i].Serializer}
		}
	}
	return thinPodCodecs{NegotiatedSerializer: codecs, infos: infos}
}

func (c thinPodCodecs) SupportedMediaTypes() []runtime.SerializerInfo { return c.infos }

// thinPodDecoder decodes Pods and PodLists thin, and everything else as its
// Serializer does.
type thinPodDecoder struct{ runtime.Serializer }

// protobufPrefix starts every protobuf-encoded object: "k8s" and a zero byte, then a
// runtime.Unknown holding the object's type and its encoding.
var protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00}

func (d thinPodDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if !bytes.HasPrefix(data, protobufPrefix) {
		return d.Serializer.Decode(data, defaults, into)
	}
	env, err := readEnvelope(data[len(protobufPrefix):])
	if err != nil || env.apiVersion != "v1" || env.contentEncoding != "" {
		return d.Serializer.Decode(data, defaults, into)
	}
	gvk := corev1.SchemeGroupVersion.WithKind(env.kind)
	var obj runtime.Object
	var ok bool
	switch env.kind {
	case "Pod":
		obj, ok, err = decodeThinInto(into, env.raw, gvk, decodeThinPod)
	case "PodList":
		obj, ok, err = decodeThinInto(into, env.raw, gvk, decodeThinPodList)
	}
	if ok {
		return obj, &gvk, err
	}
	return d.Serializer.Decode(data, defaults, into)
}

// decodeThinInto decodes raw with decode into into, emptied first, or into a new T
// when into is nil; ok is false when into is of another type.
func decodeThinInto[T any, P interface {
	*T
	runtime.Object
}](into runtime.Object, raw []byte, gvk schema.GroupVersionKind, decode func([]byte, P) error) (obj runtime.Object, ok bool, err error) {
	o, ok := into.(P)
	if into != nil && !ok {
		return nil, false, nil
	}
	if o == nil {
		o = new(T)
	} else {
		*o = *new(T)
	}
	if err := decode(raw, o); err != nil {
		return nil, true, fmt.Errorf("decoding a %s: %w", gvk.Kind, err)
	}
	o.GetObjectKind().SetGroupVersionKind(gvk)
	return o, true, nil
}

// envelope is a runtime.Unknown read in place: raw is a slice of the data.
type envelope struct {
	apiVersion, kind, contentEncoding string
	raw                               []byte
}

func readEnvelope(b []byte) (envelope, error) {
	var e envelope
	err := eachField(b, func(num int32, _, _ int, payload []byte) error {
		switch num {
		case 1: // typeMeta
			return eachField(payload, func(num int32, _, _ int, v []byte) error {
				switch num {
				case 1:
					e.apiVersion = string(v)
				case 2:
					e.kind = string(v)
				}
				return nil
			})
		case 2:
			e.raw = payload
		case 3:
			e.contentEncoding = string(payload)
		}
		return nil
	})
	return e, err
}

// decodeThinPodList decodes a PodList with its items thin.
func decodeThinPodList(b []byte, list *corev1.PodList) error {
	return eachField(b, func(num int32, from, to int, payload []byte) error {
		switch num {
		case 1: // metadata
			return list.Unmarshal(b[from:to])
		case 2: // items
			list.Items = append(list.Items, corev1.Pod{})
			return decodeThinPod(payload, &list.Items[len(list.Items)-1])
		}
		return nil
	})
}

// decodeThinPod decodes into pod the fields of the encoded pod b that slimPod keeps.
func decodeThinPod(b []byte, pod *corev1.Pod) error {
	return eachField(b, func(num int32, _, _ int, payload []byte) error {
		switch num {
		case 1:
			return pick(payload, &pod.ObjectMeta, func(num int32, _ []byte) (bool, error) {
				return num != 17, nil // managedFields
			})
		case 2:
			return pick(payload, &pod.Spec, func(num int32, v []byte) (bool, error) {
				return thinSpecField(&pod.Spec, num, v)
			})
		case 3:
			return pick(payload, &pod.Status, func(num int32, v []byte) (bool, error) {
				return thinStatusField(&pod.Status, num, v)
			})
		}
		return nil
	})
}

// thinSpecField says whether PodSpec field num (payload v) is decoded as it is; it
// decodes containers itself, thin.
func thinSpecField(spec *corev1.PodSpec, num int32, v []byte) (bool, error) {
	switch num {
	case 4, 10, 18, 28: // terminationGracePeriodSeconds, nodeName, affinity, readinessGates
		return true, nil
	case 1: // volumes: those of a claim
		return isClaimVolume(v)
	case 2:
		return false, appendThinContainer(&spec.Containers, v)
	case 20:
		return false, appendThinContainer(&spec.InitContainers, v)
	}
	return false, nil
}

// isClaimVolume says whether the encoded Volume v is a persistentVolumeClaim's.
func isClaimVolume(v []byte) (bool, error) {
	claim := false
	err := eachField(v, func(num int32, _, _ int, source []byte) error {
		if num != 2 { // volumeSource
			return nil
		}
		return eachField(source, func(num int32, _, _ int, _ []byte) error {
			claim = claim || num == 10 // persistentVolumeClaim
			return nil
		})
	})
	return claim, err
}

// appendThinContainer appends to cs the container encoded in v, with its name, image,
// resources, resize policy and restart policy (slimContainers').
func appendThinContainer(cs *[]corev1.Container, v []byte) error {
	var c corev1.Container
	if err := pick(v, &c, func(num int32, _ []byte) (bool, error) {
		return num == 1 || num == 2 || num == 8 || num == 23 || num == 24, nil
	}); err != nil {
		return err
	}
	*cs = append(*cs, c)
	return nil
}

// thinStatusField says whether PodStatus field num (payload v) is decoded as it is;
// it decodes container statuses itself, thin.
func thinStatusField(status *corev1.PodStatus, num int32, v []byte) (bool, error) {
	switch num {
	case 1, 4, 17: // phase, reason, observedGeneration
		return true, nil
	case 2: // conditions: those slimPod keeps
		var keep bool
		err := eachField(v, func(num int32, _, _ int, t []byte) error {
			if num == 1 { // type
				keep = slimKeepsCondition(corev1.PodConditionType(t))
			}
			return nil
		})
		return keep, err
	case 8:
		return false, appendThinContainerStatus(&status.ContainerStatuses, v)
	case 10:
		return false, appendThinContainerStatus(&status.InitContainerStatuses, v)
	}
	return false, nil
}

// appendThinContainerStatus appends to cs the container status encoded in v, with
// what containerStatuses keeps: name, state, readiness, restart count, image, image
// ID, allocated and actual resources.
func appendThinContainerStatus(cs *[]corev1.ContainerStatus, v []byte) error {
	var c corev1.ContainerStatus
	if err := pick(v, &c, func(num int32, _ []byte) (bool, error) {
		switch num {
		case 1, 2, 4, 5, 6, 7, 10, 11:
			return true, nil
		}
		return false, nil
	}); err != nil {
		return err
	}
	*cs = append(*cs, c)
	return nil
}

// unmarshaler is a gogo-protobuf generated message.
type unmarshaler interface{ Unmarshal([]byte) error }

// pick decodes into m the fields of the message b that keep takes, passing each
// unbroken run of them to m.Unmarshal at once: the generated Unmarshal merges into m
// (it sets scalars, appends to lists, adds to maps), so the runs decode as the whole
// message would, less the fields keep left out. keep may decode a field itself (into
// m, outside the runs) and leave it out.
func pick(b []byte, m unmarshaler, keep func(num int32, payload []byte) (bool, error)) error {
	run := -1 // where the pending run starts
	flush := func(to int) error {
		if run < 0 {
			return nil
		}
		err := m.Unmarshal(b[run:to])
		run = -1
		return err
	}
	if err := eachField(b, func(num int32, from, _ int, payload []byte) error {
		take, err := keep(num, payload)
		switch {
		case err != nil:
			return err
		case take && run < 0:
			run = from
		case !take:
			return flush(from)
		}
		return nil
	}); err != nil {
		return err
	}
	return flush(len(b))
}

var errTruncated = errors.New("truncated protobuf")

// eachField calls each with every field of the protobuf message b: its number, where
// its encoding starts and ends in b (tag included), and a length-delimited field's
// payload (nil for the other wire types).
func eachField(b []byte, each func(num int32, from, to int, payload []byte) error) error {
	for i := 0; i < len(b); {
		from := i
		tag, n := binary.Uvarint(b[i:])
		if n <= 0 {
			return errTruncated
		}
		i += n
		var payload []byte
		switch tag & 7 {
		case 0: // varint
			if _, n = binary.Uvarint(b[i:]); n <= 0 {
				return errTruncated
			}
			i += n
		case 1: // 64-bit
			i += 8
		case 2: // length-delimited
			l, n := binary.Uvarint(b[i:])
			if n <= 0 || l > uint64(len(b)-i-n) {
				return errTruncated
			}
			i += n
			payload = b[i : i+int(l)]
			i += int(l)
		case 5: // 32-bit
			i += 4
		default:
			return fmt.Errorf("protobuf wire type %d not expected", tag&7)
		}
		if i > len(b) {
			return errTruncated
		}
		if err := each(int32(tag>>3), from, i, payload); err != nil {
			return err
		}
	}
	return nil
}
