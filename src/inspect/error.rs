//! The inspect error: one variant per way a cluster can fail to answer, each message one line
//! naming the cause and the fix, and [`Error::exit_code`] for the edge.

use std::time::Duration;

use crate::exit::ExitCode;

/// Result of the inspect layer.
pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

/// Why an inspect command could not produce its view.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Error {
    /// No kubeconfig and not running in a cluster.
    #[error(
        "no kubeconfig found: pass --kubeconfig FILE, set KUBECONFIG, or create ~/.kube/config"
    )]
    NoKubeconfig,
    /// The kubeconfig could not be read or used.
    #[error(
        "cannot use kubeconfig: {cause}; fix the file or pick another with --kubeconfig/--context"
    )]
    Kubeconfig {
        /// The root cause, one line.
        cause: String,
    },
    /// Nothing answered at the server address.
    #[error("cannot reach {server}: {cause}; check that the apiserver runs and the kubeconfig server address")]
    Unreachable {
        /// The server URL.
        server: String,
        /// The root cause, one line.
        cause: String,
    },
    /// The TLS handshake failed.
    #[error("TLS handshake with {server} failed: {cause}; check certificate-authority(-data) and the server name in the kubeconfig")]
    Tls {
        /// The server URL.
        server: String,
        /// The root cause, one line.
        cause: String,
    },
    /// 401.
    #[error("{server} rejected the credentials (401 Unauthorized): renew the token or client certificate of the kubeconfig user")]
    Unauthorized {
        /// The server URL.
        server: String,
    },
    /// 403.
    #[error(
        "{server} forbids reading {what} (403 Forbidden): grant the kubeconfig user get/list on it"
    )]
    Forbidden {
        /// The server URL.
        server: String,
        /// What was asked for.
        what: String,
    },
    /// 403 on `/metrics`: reading it takes the `system:monitoring` ClusterRole.
    #[error("{server} forbids reading /metrics (403 Forbidden): the kubeconfig user needs the system:monitoring ClusterRole, e.g. kubectl create clusterrolebinding kapi-top --clusterrole=system:monitoring --user=NAME")]
    MetricsForbidden {
        /// The server URL.
        server: String,
    },
    /// No answer within --request-timeout.
    #[error("{server} did not answer {what} within {}: check the server or raise --request-timeout", humantime::format_duration(*.timeout))]
    Timeout {
        /// The server URL.
        server: String,
        /// What was asked for.
        what: String,
        /// The timeout that passed.
        timeout: Duration,
    },
    /// The API is not served by this cluster.
    #[error("{server} does not serve {what}: {hint}")]
    NotServed {
        /// The server URL.
        server: String,
        /// The API or path.
        what: String,
        /// How to get it served.
        hint: String,
    },
    /// The cluster answered with an error.
    #[error("{server} answered {what} with {code}: {message}")]
    Failed {
        /// The server URL.
        server: String,
        /// What was asked for.
        what: String,
        /// HTTP status code.
        code: u16,
        /// The server's message.
        message: String,
    },
}

impl Error {
    /// The exit code this error produces: 1 when the cluster answered, 3 when it did not.
    pub(crate) fn exit_code(&self) -> ExitCode {
        match self {
            Error::Failed { .. } => ExitCode::Problem,
            _ => ExitCode::NoAnswer,
        }
    }

    /// Classifies a kube client error raised while asking `server` for `what`.
    pub(crate) fn from_kube(err: kube::Error, server: &str, what: &str, timeout: Duration) -> Self {
        match err {
            kube::Error::Api(status) => {
                Self::from_status(status.code, &status.message, server, what)
            }
            other => Self::from_transport(&other, server, what, timeout),
        }
    }

    /// Classifies an HTTP error status.
    pub(crate) fn from_status(code: u16, message: &str, server: &str, what: &str) -> Self {
        let server = server.to_string();
        let what = what.to_string();
        match code {
            401 => Error::Unauthorized { server },
            403 => Error::Forbidden { server, what },
            404 => Error::NotServed {
                server,
                what,
                hint: "the path is not found; check that the server is a kube-apiserver".into(),
            },
            _ => Error::Failed {
                server,
                what,
                code,
                message: one_line(message),
            },
        }
    }

    /// Classifies a transport-level failure (no HTTP answer).
    pub(crate) fn from_transport(
        err: &(dyn std::error::Error + 'static),
        server: &str,
        what: &str,
        timeout: Duration,
    ) -> Self {
        let server = server.to_string();
        let texts: Vec<String> = chain(err).map(|e| e.to_string()).collect();
        let lower = texts.join(" | ").to_lowercase();
        let cause = one_line(texts.last().map(String::as_str).unwrap_or("unknown error"));
        let is_tls = chain(err).any(|e| e.downcast_ref::<rustls::Error>().is_some())
            || lower.contains("certificate")
            || lower.contains("tls")
            || lower.contains("handshake");
        let timed_out = chain(err).any(|e| {
            e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
        }) || lower.contains("timed out")
            || lower.contains("deadline has elapsed");
        if is_tls {
            Error::Tls { server, cause }
        } else if timed_out {
            Error::Timeout {
                server,
                what: what.to_string(),
                timeout,
            }
        } else {
            Error::Unreachable { server, cause }
        }
    }
}

fn chain<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(err), |e| e.source())
}

/// Collapses a message to one line.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(10);

    #[test]
    fn statuses_map_to_exit_codes() {
        let s = "https://h:6443";
        assert!(matches!(
            Error::from_status(401, "", s, "x"),
            Error::Unauthorized { .. }
        ));
        assert_eq!(
            Error::from_status(401, "", s, "x").exit_code(),
            ExitCode::NoAnswer
        );
        assert_eq!(
            Error::from_status(403, "", s, "x").exit_code(),
            ExitCode::NoAnswer
        );
        assert_eq!(
            Error::from_status(404, "", s, "x").exit_code(),
            ExitCode::NoAnswer
        );
        let e = Error::from_status(500, "boom\nagain", s, "leases");
        assert_eq!(e.exit_code(), ExitCode::Problem);
        assert_eq!(
            e.to_string(),
            "https://h:6443 answered leases with 500: boom again"
        );
    }

    #[test]
    fn transport_errors_are_classified() {
        let refused =
            std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let e = Error::from_transport(&refused, "https://h", "x", T);
        assert!(matches!(e, Error::Unreachable { .. }), "{e}");
        assert_eq!(e.exit_code(), ExitCode::NoAnswer);
        let tls = std::io::Error::other(rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer,
        ));
        assert!(matches!(
            Error::from_transport(&tls, "https://h", "x", T),
            Error::Tls { .. }
        ));
        let slow = std::io::Error::new(std::io::ErrorKind::TimedOut, "slow");
        let e = Error::from_transport(&slow, "https://h", "/readyz", T);
        assert_eq!(
            e.to_string(),
            "https://h did not answer /readyz within 10s: check the server or raise --request-timeout"
        );
    }

    #[test]
    fn messages_are_one_line() {
        let e = Error::Unreachable {
            server: "s".into(),
            cause: one_line("a\n b\tc"),
        };
        assert!(!e.to_string().contains('\n'));
        assert!(e.to_string().contains("a b c"));
    }
}
