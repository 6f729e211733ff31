package kubelet

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/distribution/reference"
)

// normalizeImage returns the fully qualified reference a container runtime reports in
// containerStatuses[].image ("nginx:1.14.2" → "docker.io/library/nginx:1.14.2").
// An image the parser rejects is reported as written.
func normalizeImage(image string) string {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return image
	}
	return reference.TagNameOnly(named).String()
}

// imageID is a stable stand-in for the digest a runtime reports in imageID: the same
// image always gets the same digest, a different image a different one.
func imageID(normalized string) string {
	sum := sha256.Sum256([]byte(normalized))
	repo := normalized
	if named, err := reference.ParseNormalizedNamed(normalized); err == nil {
		repo = named.Name()
	}
	return repo + "@sha256:" + hex.EncodeToString(sum[:])
}

// containerID names one container instance; it changes on every restart.
func containerID(podUID, container string, instance int32) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%d", podUID, container, instance)))
	return "containerd://" + hex.EncodeToString(sum[:])
}

// withDefaultTag is the image as the kubelet names it in its messages: as written, with
// ":latest" added when it has neither tag nor digest ("nginx" → "nginx:latest",
// "nginx:1.161" unchanged).
func withDefaultTag(image string) string {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil || !reference.IsNameOnly(named) {
		return image
	}
	return image + ":latest"
}
