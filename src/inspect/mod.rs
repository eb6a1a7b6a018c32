//! Collects views of a live cluster (kapi or kube-apiserver) through a kubeconfig.
//! May use: api, output, kube, k8s-openapi.
