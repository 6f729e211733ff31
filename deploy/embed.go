// Package deploy holds the manifests kroll ships for real clusters; the admission
// policy's bytes are embedded so that `kroll up` installs the very file users apply.
package deploy

import _ "embed"

// AdmissionPolicy is admission-policy.yaml: kroll's ValidatingAdmissionPolicy and its
// binding, two YAML documents.
//
//go:embed admission-policy.yaml
var AdmissionPolicy []byte

// RBAC is rbac.yaml: kroll's controller manager's ServiceAccount, roles and bindings.
// `kroll up` binds its own controllers to the very ClusterRole users apply.
//
//go:embed rbac.yaml
var RBAC []byte
