//! Tracing options (TracingOptions in k8s.io/apiserver pkg/server/options): the
//! `--tracing-config-file` flag, and the file's format, an apiserver.config.k8s.io
//! TracingConfiguration, decoded strictly and checked as upstream's
//! ValidateTracingConfiguration checks it. Parsing is pure; the server reads the file.
//! May use: nothing internal.

use serde::Deserialize;
use std::path::PathBuf;

/// `--tracing-config-file`.
#[derive(Debug, Clone, Default)]
pub struct TracingOptions {
    /// The file, when tracing is on.
    pub config_file: Option<PathBuf>,
}

impl TracingOptions {
    pub(super) fn validate(&self, errs: &mut Vec<String>) {
        if self
            .config_file
            .as_ref()
            .is_some_and(|p| p.as_os_str().is_empty())
        {
            errs.push("--tracing-config-file must not be empty".into());
        }
    }
}

/// The collector upstream's OTLP gRPC exporter sends to when no endpoint is given.
pub(crate) const DEFAULT_ENDPOINT: &str = "localhost:4317";

/// The group/versions of the TracingConfiguration kind kube-apiserver decodes.
pub(crate) const API_VERSIONS: [&str; 3] = [
    "apiserver.config.k8s.io/v1alpha1",
    "apiserver.config.k8s.io/v1beta1",
    "apiserver.config.k8s.io/v1",
];

/// The most `samplingRatePerMillion` may be (maxSamplingRatePerMillion).
pub(crate) const MAX_SAMPLING_RATE_PER_MILLION: u32 = 1_000_000;

/// A valid TracingConfiguration, defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TracingConfiguration {
    /// Where spans go: `host:port`, the gRPC target of an OTLP collector (plaintext, as
    /// upstream's exporter dials it).
    pub endpoint: String,
    /// Of every million new traces, how many are sampled; a request that carries a sampled
    /// trace context is sampled whatever this says (upstream's ParentBased sampler).
    pub sampling_rate_per_million: u32,
}

/// Why a TracingConfiguration was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ParseError {
    /// Neither YAML nor JSON of the configuration's shape (a field of the wrong type).
    #[error("cannot decode")]
    Decode(#[source] serde_yaml::Error),
    /// It decodes, but fields hold values the configuration does not allow; each entry is
    /// `field: problem`.
    #[error("{}", .0.join("; "))]
    Invalid(Vec<String>),
}

/// The file as written; every field optional, checked by [`validate`].
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Doc {
    api_version: Option<String>,
    kind: Option<String>,
    endpoint: Option<String>,
    // Wider than the field's int32, so that any number reaches validation and is refused
    // there with the field's name.
    sampling_rate_per_million: Option<i64>,
}

impl TracingConfiguration {
    /// Decodes and checks a TracingConfiguration (YAML or JSON). Unknown fields are refused,
    /// as upstream's strict decoder refuses them.
    ///
    /// # Errors
    ///
    /// [`ParseError::Decode`] when it does not decode, [`ParseError::Invalid`] naming each
    /// field that is unknown, missing or out of range.
    pub(crate) fn parse(bytes: &[u8]) -> Result<TracingConfiguration, ParseError> {
        let mut unknown = Vec::new();
        let de = serde_yaml::Deserializer::from_slice(bytes);
        let doc: Option<Doc> =
            serde_ignored::deserialize(de, |path| unknown.push(path.to_string()))
                .map_err(ParseError::Decode)?;
        let doc = doc.unwrap_or_default();
        let mut problems: Vec<String> = unknown
            .iter()
            // `?.` is the Option the document is read into.
            .map(|field| format!("{}: unknown field", field.trim_start_matches("?.")))
            .collect();
        let config = validate(doc, &mut problems);
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ParseError::Invalid(problems))
        }
    }
}

fn validate(doc: Doc, problems: &mut Vec<String>) -> TracingConfiguration {
    match doc.api_version.as_deref() {
        None | Some("") => problems.push(format!(
            "apiVersion: Required value: one of {}",
            API_VERSIONS.join(", ")
        )),
        Some(v) if !API_VERSIONS.contains(&v) => problems.push(format!(
            "apiVersion: Unsupported value: {v:?}: supported values: {}",
            API_VERSIONS.join(", ")
        )),
        Some(_) => {}
    }
    match doc.kind.as_deref() {
        None | Some("") => problems.push("kind: Required value: TracingConfiguration".into()),
        Some("TracingConfiguration") => {}
        Some(k) => problems.push(format!(
            "kind: Unsupported value: {k:?}: supported values: \"TracingConfiguration\""
        )),
    }
    let rate = doc.sampling_rate_per_million.unwrap_or(0);
    if rate < 0 {
        problems.push(format!(
            "samplingRatePerMillion: Invalid value: {rate}: sampling rate must be positive"
        ));
    } else if rate > i64::from(MAX_SAMPLING_RATE_PER_MILLION) {
        problems.push(format!(
            "samplingRatePerMillion: Invalid value: {rate}: sampling rate per million must be less than or equal to one million"
        ));
    }
    let endpoint = match doc.endpoint {
        Some(endpoint) => match grpc_target(&endpoint) {
            Ok(target) => target,
            Err(problem) => {
                problems.push(format!("endpoint: Invalid value: {endpoint:?}: {problem}"));
                String::new()
            }
        },
        None => DEFAULT_ENDPOINT.to_string(),
    };
    TracingConfiguration {
        endpoint,
        sampling_rate_per_million: u32::try_from(rate).unwrap_or(0),
    }
}

/// The `host:port` a gRPC target names (upstream's validateEndpoint: no scheme or `dns`).
/// `unix` and `unix-abstract` targets, which upstream also takes, are refused: kapi's
/// exporter dials TCP only.
fn grpc_target(endpoint: &str) -> Result<String, String> {
    let authority = if let Some((scheme, rest)) = endpoint.split_once("://") {
        match scheme {
            // dns:[//authority]/host[:port]: the DNS server's authority is not used.
            "dns" => rest.split_once('/').map_or(rest, |(_, target)| target),
            "unix" | "unix-abstract" => {
                return Err(format!(
                    "unsupported scheme: {scheme}. kapi sends spans over TCP only: give host:port"
                ))
            }
            _ => {
                return Err(format!(
                    "unsupported scheme: {scheme}. Options are none, dns, unix, or unix-abstract. See https://github.com/grpc/grpc/blob/master/doc/naming.md"
                ))
            }
        }
    } else if let Some(target) = endpoint.strip_prefix("dns:") {
        target
    } else if endpoint.starts_with("unix:") || endpoint.starts_with("unix-abstract:") {
        return Err("kapi sends spans over TCP only: give host:port".into());
    } else {
        endpoint
    };
    let (host, port) = authority
        .rsplit_once(':')
        .ok_or_else(|| "missing port: give host:port".to_string())?;
    let bracketed = host.starts_with('[') && host.ends_with(']');
    if host.is_empty() || (host.contains(':') && !bracketed) || host.contains(['/', '@', ' ']) {
        return Err(format!("invalid host {host:?}: give host:port"));
    }
    if port.parse::<u16>().map_or(true, |p| p == 0) {
        return Err(format!("invalid port {port:?}: give host:port"));
    }
    Ok(format!("{host}:{port}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(yaml: &str) -> Vec<String> {
        match TracingConfiguration::parse(yaml.as_bytes()) {
            Err(ParseError::Invalid(p)) => p,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    const HEADER: &str = "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n";

    #[test]
    fn defaults_apply_to_a_bare_configuration() {
        let config = TracingConfiguration::parse(HEADER.as_bytes()).unwrap();
        assert_eq!(config.endpoint, "localhost:4317");
        assert_eq!(config.sampling_rate_per_million, 0);
    }

    #[test]
    fn every_api_version_and_json_decode() {
        for version in API_VERSIONS {
            let json = format!(
                r#"{{"apiVersion":"{version}","kind":"TracingConfiguration","endpoint":"collector:4317","samplingRatePerMillion":1000000}}"#
            );
            let config = TracingConfiguration::parse(json.as_bytes()).unwrap();
            assert_eq!(config.endpoint, "collector:4317");
            assert_eq!(config.sampling_rate_per_million, 1_000_000);
        }
    }

    #[test]
    fn dns_targets_name_their_host_and_port() {
        for (given, target) in [
            ("dns:///collector.svc:4317", "collector.svc:4317"),
            ("dns://8.8.8.8/collector:4317", "collector:4317"),
            ("dns:collector:4317", "collector:4317"),
            ("[::1]:4317", "[::1]:4317"),
            ("127.0.0.1:55680", "127.0.0.1:55680"),
        ] {
            assert_eq!(grpc_target(given).as_deref(), Ok(target), "{given}");
        }
    }

    #[test]
    fn sampling_rate_outside_zero_to_a_million_names_the_field() {
        let p = problems(&format!("{HEADER}samplingRatePerMillion: 1000001\n"));
        assert_eq!(p.len(), 1);
        assert!(
            p[0].starts_with("samplingRatePerMillion: Invalid value: 1000001"),
            "{p:?}"
        );
        let p = problems(&format!("{HEADER}samplingRatePerMillion: -1\n"));
        assert!(
            p[0].starts_with("samplingRatePerMillion: Invalid value: -1"),
            "{p:?}"
        );
    }

    #[test]
    fn bad_endpoints_name_the_field() {
        for endpoint in [
            "http://collector:4317",
            "unix:///run/otel.sock",
            "collector",
            "collector:0",
            "collector:http",
            ":4317",
        ] {
            let p = problems(&format!("{HEADER}endpoint: {endpoint:?}\n"));
            assert_eq!(p.len(), 1, "{endpoint}: {p:?}");
            assert!(p[0].starts_with("endpoint: Invalid value:"), "{p:?}");
        }
    }

    #[test]
    fn unknown_fields_version_and_kind_are_refused() {
        let p = problems(&format!("{HEADER}endpoints: collector:4317\n"));
        assert_eq!(p, ["endpoints: unknown field"]);
        let p = problems("apiVersion: apiserver.config.k8s.io/v2\nkind: TracingConfiguration\n");
        assert!(p[0].starts_with("apiVersion: Unsupported value: \"apiserver.config.k8s.io/v2\""));
        let p =
            problems("apiVersion: apiserver.config.k8s.io/v1\nkind: EgressSelectorConfiguration\n");
        assert!(p[0].starts_with("kind: Unsupported value"), "{p:?}");
        let p = problems("");
        assert_eq!(p.len(), 2);
        assert!(p[0].starts_with("apiVersion: Required value"));
        assert!(p[1].starts_with("kind: Required value"));
    }

    #[test]
    fn a_field_of_the_wrong_type_does_not_decode_and_names_the_field() {
        let err = TracingConfiguration::parse(
            format!("{HEADER}samplingRatePerMillion: lots\n").as_bytes(),
        )
        .unwrap_err();
        let ParseError::Decode(e) = err else {
            panic!("expected Decode, got {err:?}");
        };
        assert!(e.to_string().contains("samplingRatePerMillion"), "{e}");
    }

    #[test]
    fn an_empty_flag_is_refused() {
        let mut errs = Vec::new();
        TracingOptions {
            config_file: Some(PathBuf::new()),
        }
        .validate(&mut errs);
        assert_eq!(errs, ["--tracing-config-file must not be empty"]);
    }
}
