//! Names kube-apiserver gives its identity leases, shared by the controllers that write them
//! and the `kapi leases` command that reads them (k8s.io/api core/v1 well-known labels and
//! annotations, pkg/controlplane/apiserver).

/// Namespace of identity leases and of the control plane's leader-election locks.
pub(crate) const KUBE_SYSTEM: &str = "kube-system";
/// Label marking identity leases; its value is the server name (`kube-apiserver`).
pub(crate) const IDENTITY_LABEL: &str = "apiserver.kubernetes.io/identity";
/// The component name every kube-apiserver uses in its ID and identity label.
pub(crate) const KUBE_APISERVER: &str = "kube-apiserver";
/// Well-known hostname label (`v1.LabelHostname`).
pub(crate) const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
/// Annotation carrying the peer proxy address `ip:port` (`v1.AnnotationPeerAdvertiseAddress`,
/// gate UnknownVersionInteroperabilityProxy).
pub(crate) const PEER_ADDRESS_ANNOTATION: &str = "kubernetes.io/peer-advertise-address";

/// The finalizer that makes the garbage collector orphan the dependents
/// (`metav1.FinalizerOrphanDependents`).
pub(crate) const FINALIZER_ORPHAN: &str = "orphan";
/// The finalizer of a foreground deletion (`metav1.FinalizerDeleteDependents`).
pub(crate) const FINALIZER_FOREGROUND: &str = "foregroundDeletion";
/// The finalizer of a namespace being emptied (`v1.FinalizerKubernetes`).
pub(crate) const FINALIZER_KUBERNETES: &str = "kubernetes";
