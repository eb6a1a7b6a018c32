//! Shared test harness: [`TestServer`] spawns the real `kapi serve` on 127.0.0.1 with port 0
//! and a temp data dir, waits until it is ready, and exposes the admin kubeconfig, a
//! kube::Client, HTTPS clients (admin, anonymous, custom identity) and a kubectl runner.
//! The process is killed and reaped on drop.
#![allow(dead_code)]

pub(crate) mod etcd;
pub(crate) mod pty;

use base64::Engine;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Upper bound for a server to become ready.
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs a future under a timeout, failing the test with `what` when it expires.
pub(crate) async fn within<F: std::future::Future>(
    limit: Duration,
    what: &str,
    fut: F,
) -> F::Output {
    tokio::time::timeout(limit, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out after {limit:?}: {what}"))
}

/// How to start a server.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// Extra `kapi serve` arguments.
    pub args: Vec<String>,
    /// Path polled until it answers 200 (default `/readyz`).
    pub wait_path: String,
    /// Poll it as the admin rather than anonymously (anonymous requests off or forbidden).
    pub probe_as_admin: bool,
    /// Reuse this data dir instead of a fresh temp dir.
    pub data_dir: Option<Arc<tempfile::TempDir>>,
    /// Stop reading the server's stderr (closing the pipe) once it has named its kubeconfig.
    pub close_stderr: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            args: vec![],
            wait_path: "/readyz".into(),
            probe_as_admin: false,
            data_dir: None,
            close_stderr: false,
        }
    }
}

impl Options {
    /// A replica on the etcd at `etcd` sharing the PKI in `cert_dir`, named `host`, that
    /// publishes its peer address in its identity lease (renewed every second): what
    /// `--all-apiservers` finds.
    pub(crate) fn peer_replica(etcd: &str, cert_dir: &std::path::Path, host: &str) -> Options {
        Options::default().args([
            "--etcd-servers",
            etcd,
            "--cert-dir",
            &cert_dir.display().to_string(),
            "--hostname-override",
            host,
            "--feature-gates",
            "UnknownVersionInteroperabilityProxy=true",
            "--peer-advertise-ip",
            "127.0.0.1",
            "--identity-lease-renew-interval",
            "1s",
        ])
    }

    /// Adds `kapi serve` arguments.
    pub(crate) fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Waits for `path` instead of /readyz.
    pub(crate) fn wait_for(mut self, path: &str) -> Self {
        self.wait_path = path.into();
        self
    }

    /// Polls the wait path as the admin (for servers where anonymous users may not).
    pub(crate) fn probe_as_admin(mut self) -> Self {
        self.probe_as_admin = true;
        self
    }

    /// Closes the read end of the server's stderr once it has named its kubeconfig, as when
    /// the reader of `kapi serve 2>&1 | tee log` goes away.
    pub(crate) fn close_stderr(mut self) -> Self {
        self.close_stderr = true;
        self
    }

    /// Runs in an existing data dir.
    pub(crate) fn data_dir(mut self, dir: Arc<tempfile::TempDir>) -> Self {
        self.data_dir = Some(dir);
        self
    }
}

/// A running `kapi serve` process.
pub(crate) struct TestServer {
    child: Child,
    /// The data dir (kept alive as long as the server).
    pub dir: Arc<tempfile::TempDir>,
    /// The actual port.
    pub port: u16,
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    kubeconfig: PathBuf,
    stderr: Arc<Mutex<Vec<String>>>,
    /// PEM of the CA that signs the serving certificate.
    pub ca_pem: String,
    /// PEM of the admin client certificate + key.
    pub admin_pem: String,
    /// Time from spawn to the first 200 on the wait path.
    pub ready_after: Duration,
}

impl TestServer {
    /// Starts a server with default options and waits for /readyz.
    pub(crate) async fn start() -> TestServer {
        Self::start_with(Options::default()).await
    }

    /// Starts a server with `opts`.
    pub(crate) async fn start_with(opts: Options) -> TestServer {
        within(START_TIMEOUT, "kapi serve to start", Self::spawn(opts)).await
    }

    async fn spawn(opts: Options) -> TestServer {
        let dir = opts
            .data_dir
            .clone()
            .unwrap_or_else(|| Arc::new(tempfile::tempdir().expect("tempdir")));
        let started = Instant::now();
        let mut args: Vec<String> = vec![
            "serve".into(),
            "--bind-address".into(),
            "127.0.0.1".into(),
            "--data-dir".into(),
            dir.path().display().to_string(),
        ];
        if !opts.args.iter().any(|a| a.starts_with("--secure-port")) {
            args.extend(["--secure-port".into(), "0".into()]);
        }
        args.extend(opts.args.iter().cloned());
        let mut child = Command::new(env!("CARGO_BIN_EXE_kapi"))
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn kapi serve");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel::<PathBuf>();
        let pipe = child.stderr.take().expect("piped stderr");
        let lines = stderr.clone();
        let close = opts.close_stderr;
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                let named = line.strip_prefix("export KUBECONFIG=").map(PathBuf::from);
                lines.lock().unwrap().push(line);
                if let Some(path) = named {
                    let _ = tx.send(path);
                    if close {
                        break; // drops the pipe's read end
                    }
                }
            }
        });
        let kubeconfig = loop {
            if let Ok(path) = rx.try_recv() {
                break path;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "kapi serve exited early with {status}:\n{}",
                    stderr.lock().unwrap().join("\n")
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let doc: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(&kubeconfig).unwrap()).unwrap();
        let b64 = |v: &serde_yaml::Value| {
            String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(v.as_str().unwrap())
                    .unwrap(),
            )
            .unwrap()
        };
        let cluster = &doc["clusters"][0]["cluster"];
        let url = cluster["server"].as_str().unwrap().to_string();
        let port = url.rsplit(':').next().unwrap().parse().unwrap();
        let ca_pem = b64(&cluster["certificate-authority-data"]);
        let user = &doc["users"][0]["user"];
        let admin_pem = format!(
            "{}{}",
            b64(&user["client-certificate-data"]),
            b64(&user["client-key-data"])
        );
        let mut server = TestServer {
            child,
            dir,
            port,
            url,
            kubeconfig,
            stderr,
            ca_pem,
            admin_pem,
            ready_after: Duration::ZERO,
        };
        let probe = if opts.probe_as_admin {
            server.admin_http()
        } else {
            server.anonymous_http()
        };
        loop {
            if let Ok(resp) = probe.get(server.url(&opts.wait_path)).send().await {
                if resp.status() == 200 {
                    break;
                }
            }
            if let Some(status) = server.child.try_wait().unwrap() {
                panic!("kapi serve exited with {status}:\n{}", server.stderr());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        server.ready_after = started.elapsed();
        server
    }

    /// Absolute URL of `path` (path may include a query).
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{}", self.url, path)
    }

    /// The admin kubeconfig written by the server.
    pub(crate) fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The server's stderr so far.
    pub(crate) fn stderr(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal (e.g. `libc::SIGTERM`).
    pub(crate) fn signal(&self, sig: i32) {
        let rc = send_signal(self.child.id(), sig);
        assert!(rc, "kill failed");
    }

    /// Whether the process still runs.
    pub(crate) fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Waits for the process to exit.
    pub(crate) async fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "server did not exit within {limit:?}:\n{}",
                self.stderr()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A kube::Client from the admin kubeconfig.
    pub(crate) async fn client(&self) -> kube::Client {
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("read kubeconfig");
        let config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .expect("kube config");
        kube::Client::try_from(config).expect("kube client")
    }

    /// An HTTPS client presenting `identity_pem` (cert + key PEM), or none.
    pub(crate) fn http_with(&self, identity_pem: Option<&str>) -> reqwest::Client {
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(self.ca_pem.as_bytes()).unwrap())
            .timeout(Duration::from_secs(30));
        if let Some(pem) = identity_pem {
            builder = builder.identity(reqwest::Identity::from_pem(pem.as_bytes()).unwrap());
        }
        builder.build().unwrap()
    }

    /// An HTTPS client with the admin certificate.
    pub(crate) fn admin_http(&self) -> reqwest::Client {
        self.http_with(Some(&self.admin_pem))
    }

    /// An HTTPS client without credentials.
    pub(crate) fn anonymous_http(&self) -> reqwest::Client {
        self.http_with(None)
    }

    /// A kubeconfig in the data dir for a user who presents bearer `token` (and no
    /// certificate), named after `user`.
    pub(crate) fn token_kubeconfig(&self, user: &str, token: &str) -> PathBuf {
        let b64 = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        let path = self
            .dir
            .path()
            .join(format!("{}.kubeconfig", user.replace(':', "-")));
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kapi\n  cluster:\n    server: {url}\n    certificate-authority-data: {b64}\nusers:\n- name: {user}\n  user:\n    token: {token}\ncontexts:\n- name: {user}\n  context:\n    cluster: kapi\n    user: {user}\ncurrent-context: {user}\n",
            url = self.url,
            user = user.replace(':', "-"),
        );
        std::fs::write(&path, text).expect("write kubeconfig");
        path
    }

    /// Runs kubectl with the admin kubeconfig and returns its stdout, trimmed; fails the test
    /// with kubectl's output when it does not succeed.
    pub(crate) async fn kubectl_ok(&self, args: &[&str]) -> String {
        let o = self.kubectl(args).await;
        assert!(o.status.success(), "kubectl {args:?}: {}", output_text(&o));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// Runs kubectl (from PATH) with the admin kubeconfig.
    pub(crate) async fn kubectl(&self, args: &[&str]) -> std::process::Output {
        kubectl_with(&self.kubeconfig, args).await
    }
}

/// A command's stdout then stderr, as text.
/// A server that writes every request at level Metadata to an audit log: the server, the log's
/// path, and the folder holding both the log and the policy (kept for the test's duration).
pub(crate) async fn audited_server() -> (TestServer, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("audit-policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    )
    .unwrap();
    let log = dir.path().join("audit.log");
    let server = TestServer::start_with(Options::default().args([
        "--audit-policy-file".to_string(),
        policy.display().to_string(),
        "--audit-log-path".to_string(),
        log.display().to_string(),
    ]))
    .await;
    (server, log, dir)
}

pub(crate) fn output_text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs kubectl (from PATH) with a given kubeconfig, under a timeout.
pub(crate) async fn kubectl_with(kubeconfig: &Path, args: &[&str]) -> std::process::Output {
    let fut = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .kill_on_drop(true)
        .output();
    within(Duration::from_secs(60), "kubectl", fut)
        .await
        .expect("run kubectl (is it on PATH?)")
}

fn send_signal(pid: u32, sig: i32) -> bool {
    Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Text body and status of a GET.
pub(crate) async fn get_text(client: &reqwest::Client, url: &str) -> (u16, String) {
    let resp = within(Duration::from_secs(30), url, client.get(url).send())
        .await
        .expect("request");
    let code = resp.status().as_u16();
    (
        code,
        within(Duration::from_secs(30), url, resp.text())
            .await
            .unwrap(),
    )
}

/// A TLS acceptor for 127.0.0.1 with a fresh self-signed certificate, and that certificate
/// (PEM) for the client to trust: what the webhook servers inside the tests serve with.
pub(crate) fn self_signed_tls() -> (tokio_rustls::TlsAcceptor, String) {
    self_signed_tls_for(&["127.0.0.1"])
}

/// [`self_signed_tls`] for the given names (IP addresses or DNS names).
pub(crate) fn self_signed_tls_for(names: &[&str]) -> (tokio_rustls::TlsAcceptor, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let params = rcgen::CertificateParams::new(names).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let certs = vec![cert.der().clone()];
    let key = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    (
        tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        cert.pem(),
    )
}
