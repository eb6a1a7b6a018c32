//! The layering rules of STYLE.md, enforced: every `crate::<module>` path in `src/<layer>/`
//! must point to a layer that layer may use. With a single crate the compiler cannot check
//! this, so this test does.

use std::collections::BTreeMap;
use std::path::Path;

/// layer → the layers it may name (itself is always allowed).
const ALLOWED: &[(&str, &[&str])] = &[
    ("api", &[]),
    // The store records its own figures (fsync latency, commit batches, the watch cache's
    // dispatches) in the metrics, a leaf that names only api.
    // and the spans of traced requests (api::trace).
    ("storage", &["metrics", "api"]),
    ("output", &[]),
    ("options", &[]),
    ("exit", &[]),
    ("logging", &[]),
    ("cli", &["options", "logging", "output"]),
    // Service-account keys and JWTs, used by the authenticator, TokenRequest and the server.
    ("serviceaccount", &["api"]),
    // Prometheus metrics, recorded by the handler chain.
    ("metrics", &["api"]),
    // Audit logging: the policy, the events and the log, counted in the metrics.
    ("audit", &["api", "metrics", "options"]),
    ("filters", &["api", "serviceaccount", "audit"]),
    ("registry", &["storage", "api", "serviceaccount", "metrics"]),
    ("endpoints", &["registry", "api", "metrics"]),
    // kube-aggregator: follows APIServices in the registry, proxies with the caller's identity.
    ("aggregator", &["registry", "api"]),
    (
        "server",
        &[
            "options",
            "filters",
            "endpoints",
            "registry",
            "storage",
            "api",
            "serviceaccount",
            "metrics",
            "aggregator",
            "audit",
        ],
    ),
    // The CRD controllers decide conditions with the CRD validation's pure functions and
    // the built-in resources' names, as upstream's controllers import those packages.
    (
        "controllers",
        &[
            "api",
            "server::hooks",
            "options",
            "registry::apiextensions::validation",
            "registry::resources",
            // The ValidatingAdmissionPolicy status controller type-checks with the admission
            // policies' pure checker, as upstream's imports the plugin's typechecking.go.
            "registry::admission::typecheck",
            // The tokens controller signs legacy tokens, as kube-controller-manager's does
            // with pkg/serviceaccount.
            "serviceaccount",
            // The identity lease controller counts its renewals.
            "metrics",
        ],
    ),
    ("inspect", &["output", "api", "exit"]),
    ("cmd", &["*"]),
    // The fuzz targets' entry points (feature `fuzzing`) wire a registry to the endpoints.
    (
        "fuzzing",
        &["endpoints", "registry", "storage", "api", "note"],
    ),
];

fn layer_of(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().to_string());
    first
        .unwrap_or_default()
        .trim_end_matches(".rs")
        .to_string()
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_crate_path_points_down_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).expect("file under src/");
        let layer = layer_of(rel);
        if layer == "lib" || layer == "main" {
            continue;
        }
        let Some(may_use) = allowed.get(layer.as_str()) else {
            violations.push(format!(
                "{}: layer {layer:?} is not in the layering table",
                rel.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(&file).expect("source is UTF-8");
        for (lineno, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for (idx, _) in code.match_indices("crate::") {
                let rest = &code[idx + "crate::".len()..];
                let target: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let top = target.split("::").next().unwrap_or("").to_string();
                if top.is_empty() || top == layer || may_use.contains(&"*") {
                    continue;
                }
                let ok = may_use.iter().any(|allowed| {
                    target == *allowed
                        || target.starts_with(&format!("{allowed}::"))
                        || (!allowed.contains("::") && top == *allowed)
                });
                if !ok {
                    violations.push(format!(
                        "{}:{}: layer {layer:?} may not use crate::{target}",
                        rel.display(),
                        lineno + 1
                    ));
                }
            }
        }
    }
    assert!(
        violations.is_empty(),
        "layering violations:\n{}",
        violations.join("\n")
    );
}
